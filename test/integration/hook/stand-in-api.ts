// Local stand-ins for the model APIs the real agents call (agents.test.ts): each answers the agent's
// main conversation with a fixed script of shell tool calls, one per turn, then a closing text, and
// answers the agents' side requests (titles, routing classifiers) with well-formed filler. Each request
// is kept, so a test can read what the agent told the model (a hook's additional context).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StandIn {
  /** The base URL to point the agent at (ANTHROPIC_BASE_URL, GOOGLE_GEMINI_BASE_URL). */
  url: string;
  /** Every request body received, as text. */
  requests: string[];
  close(): Promise<void>;
}

type Answer = (body: Record<string, unknown>, url: string, res: ServerResponse) => void;

async function serve(answer: Answer): Promise<StandIn> {
  const requests: string[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      requests.push(body);
      answer(body ? (JSON.parse(body) as Record<string, unknown>) : {}, req.url ?? '', res);
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}

/** How many tool results the conversation holds: the script's next step. */
function countParts(messages: unknown, key: string, value?: string): number {
  const text = JSON.stringify(messages ?? []);
  const needle = value === undefined ? `"${key}":` : `"${key}":"${value}"`;
  return text.split(needle).length - 1;
}

/**
 * The Anthropic Messages API as Claude Code uses it (streamed): the request that offers the Bash tool
 * gets the script's next `tool_use`, any other a text.
 */
export function anthropicStandIn(script: readonly Record<string, unknown>[]): Promise<StandIn> {
  let ids = 0;
  return serve((body, url, res) => {
    if (!url.startsWith('/v1/messages') || url.includes('count_tokens')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ input_tokens: 1 }));
      return;
    }
    const main = JSON.stringify(body.tools ?? []).includes('"Bash"');
    const step = countParts(body.messages, 'type', 'tool_result');
    const block =
      main && step < script.length
        ? { type: 'tool_use', id: `toolu_${++ids}`, name: 'Bash', input: script[step] }
        : { type: 'text', text: main ? 'DONE' : 'ok' };
    const stop = block.type === 'tool_use' ? 'tool_use' : 'end_turn';
    const usage = { input_tokens: 1, output_tokens: 1 };
    const message = { id: `msg_${++ids}`, type: 'message', role: 'assistant', model: body.model, usage };
    if (!body.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ...message, content: [block], stop_reason: stop, stop_sequence: null }));
      return;
    }
    const delta =
      block.type === 'tool_use'
        ? { type: 'input_json_delta', partial_json: JSON.stringify(block.input) }
        : { type: 'text_delta', text: block.text };
    const events: [string, Record<string, unknown>][] = [
      ['message_start', { message: { ...message, content: [], stop_reason: null, stop_sequence: null } }],
      [
        'content_block_start',
        { index: 0, content_block: block.type === 'tool_use' ? { ...block, input: {} } : { type: 'text', text: '' } },
      ],
      ['content_block_delta', { index: 0, delta }],
      ['content_block_stop', { index: 0 }],
      ['message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 1 } }],
      ['message_stop', {}],
    ];
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(events.map(([type, data]) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`).join(''));
  });
}

/** A JSON answer to a request that asks for one (Gemini CLI's routing classifier): strings and numbers. */
function filled(schema: unknown): string {
  const properties = (schema as { properties?: Record<string, { type?: string }> } | undefined)?.properties ?? {};
  const entries = Object.entries(properties).map(([name, p]) => [
    name,
    /INT|NUM/i.test(p.type ?? '') ? 1 : name === 'next_speaker' ? 'user' : 'x',
  ]);
  return JSON.stringify(Object.fromEntries(entries));
}

/**
 * The Gemini API as Gemini CLI uses it: the request that offers run_shell_command gets the script's
 * next `functionCall`, any other a text (or the JSON object its schema asks for).
 */
export function geminiStandIn(script: readonly Record<string, unknown>[]): Promise<StandIn> {
  return serve((body, url, res) => {
    if (url.includes(':countTokens')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"totalTokens":1}');
      return;
    }
    const main = JSON.stringify(body.tools ?? []).includes('run_shell_command');
    const step = countParts(body.contents, 'functionResponse');
    const config = body.generationConfig as { responseJsonSchema?: unknown; responseSchema?: unknown } | undefined;
    const part =
      main && step < script.length
        ? { functionCall: { name: 'run_shell_command', args: script[step] } }
        : { text: main ? 'DONE' : filled(config?.responseJsonSchema ?? config?.responseSchema) };
    const chunk = {
      candidates: [{ content: { role: 'model', parts: [part] }, finishReason: 'STOP', index: 0 }],
      usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1, totalTokenCount: 2 },
    };
    const streamed = url.includes('alt=sse');
    res.writeHead(200, { 'content-type': streamed ? 'text/event-stream' : 'application/json' });
    res.end(streamed ? `data: ${JSON.stringify(chunk)}\n\n` : JSON.stringify(chunk));
  });
}
