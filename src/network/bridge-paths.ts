// Where the egress bridge (network/host/bridge.cjs) is inside a sandbox with a network namespace of
// its own: its program, its script and the session directory holding sbx's sockets. Pure. The Policy
// mounts them there (policy/derive/network.ts bridgeLayers); the launchers start the bridge from there
// (backend/shared/bridge.ts).

/** The directory the bridge's files appear in (the sandbox root is otherwise empty there). */
const BRIDGE_DIR = '/run/sbx';
/** The Node binary the bridge runs on. */
export const BRIDGE_NODE = `${BRIDGE_DIR}/node`;
export const BRIDGE_SCRIPT = `${BRIDGE_DIR}/bridge.cjs`;
/** The network judge (native/sbx-landlock.c --judge), which starts the bridge under transparent capture. */
export const BRIDGE_JUDGE = `${BRIDGE_DIR}/sbx-landlock`;
/** This run's session directory: the proxy's, the host ports' and the published ports' sockets. */
export const BRIDGE_SESSION = `${BRIDGE_DIR}/session`;
