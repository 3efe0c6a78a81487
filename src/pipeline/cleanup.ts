// One cleanup stack per run: each stage that creates something (a pin, the session directory, a
// cgroup, the proxy) pushes how to undo it, and the orchestrator unwinds in reverse, whatever ended
// the run.
export class CleanupStack {
  private readonly steps: (() => void | Promise<void>)[] = [];

  defer(step: () => void | Promise<void>): void {
    this.steps.push(step);
  }

  /** Runs every step, last first, even past a failing one; then throws the first failure. */
  async unwind(): Promise<void> {
    let failure: { error: unknown } | undefined;
    for (const step of this.steps.splice(0).reverse()) {
      try {
        await step();
      } catch (error) {
        failure ??= { error };
      }
    }
    if (failure) throw failure.error;
  }
}
