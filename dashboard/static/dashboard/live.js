// The inspector's websocket client. Frames carry an epoch (per server
// process) and a seq (per frame sent to us): a snapshot resets both, an
// update must be seq + 1 of the same epoch or we ask for a resync rather
// than show a tree built from a missing delta. Every applied frame is
// acknowledged; the server sends at most a couple of unacknowledged frames,
// so a busy or backgrounded tab costs dropped frames, never a growing queue.

import { parseExact } from "./exact_json.js";

const BACKOFF_MIN = 500;
const BACKOFF_MAX = 5000;
const SIGNED_OUT = 4401; // dashboard.consumers.CLOSE_UNAUTHORISED
// The login holds as many inspectors as the server allows (CLOSE_TOO_MANY):
// try again slowly, so this tab connects once another one closes.
const TOO_MANY = 4429;
const LOGIN_URL = "/login/"; // settings.LOGIN_URL
// Each frame's apply is timed as a `qi-apply` measure, which the inspector
// benchmark reads (tests/load/inspector_bench.py). The browser keeps every
// measure until cleared: at a few frames a second, a tab left open for a day
// held over a million. They start over every this many frames, counted by
// `frames`, which the benchmark zeroes with the measures it reads.
const MEASURES_KEPT = 1000;

export class LiveClient {
  constructor(path, { params, onFrame, onState, onError }) {
    this.path = path;
    this.params = params;
    this.onFrame = onFrame;
    this.onState = onState;
    this.onError = onError || (() => {});
    this.epoch = null;
    this.seq = 0;
    this.paused = false;
    this.backoff = BACKOFF_MIN;
    this.lastFrameAt = null;
    this.bytes = 0;
    this.frames = 0;
    this.resyncs = 0;
    this.ws = null;
    // The open drill-down (dashboard/drill.js), asked for again after a reconnect.
    this.drill = null;
    this.setState("connecting");
  }

  url() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    return `${scheme}//${location.host}${this.path}`;
  }

  connect() {
    const ws = new WebSocket(this.url());
    this.ws = ws;
    let opened = false;
    ws.onopen = () => {
      opened = true;
      this.backoff = BACKOFF_MIN;
      this.send({ type: "subscribe", ...this.params });
      if (this.drill) this.send(this.drill);
      if (this.paused) {
        this.send({ type: "pause" });
        // No frame comes to say "live" while paused, so "reconnecting" stayed up.
        this.setState("paused");
      }
    };
    ws.onmessage = (event) => this.receive(event.data);
    ws.onclose = (event) => {
      if (this.ws !== ws) return;
      this.ws = null;
      // 4401: the session logged out (in this tab or another). A handshake
      // refused (no session any more: expired) reads as a network failure,
      // so the page itself is asked whether it still needs a login.
      if (event.code === SIGNED_OUT) { this.signIn(); return; }
      if (event.code === TOO_MANY) {
        this.setState("too-many");
        setTimeout(() => this.connect(), BACKOFF_MAX);
        return;
      }
      if (!opened) this.checkSignedIn();
      this.setState("reconnecting");
      setTimeout(() => this.connect(), this.backoff);
      this.backoff = Math.min(BACKOFF_MAX, this.backoff * 2);
    };
  }

  async checkSignedIn() {
    try {
      const answer = await fetch(location.href, { redirect: "manual", credentials: "same-origin" });
      // The page redirects (to the login) only when the session is gone.
      if (answer.type === "opaqueredirect") this.signIn();
    } catch {
      // The server is down: keep reconnecting.
    }
  }

  signIn() {
    this.ws = null;
    this.setState("signed-out");
    location.assign(`${LOGIN_URL}?next=${encodeURIComponent(location.pathname + location.search)}`);
  }

  send(message) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  subscribe(params) {
    this.params = params;
    this.send({ type: "subscribe", ...params });
  }

  setDrill(message) {
    const had = this.drill !== null;
    this.drill = message;
    if (message) this.send(message);
    else if (had) this.send({ type: "drill_close" });
  }

  pause() {
    this.paused = true;
    this.send({ type: "pause" });
    this.setState("paused");
  }

  resume() {
    this.paused = false;
    this.send({ type: "resume" });
    this.setState(this.ws ? "live" : "reconnecting");
  }

  receive(data) {
    this.bytes += data.length;
    const msg = parseExact(data);
    if (msg.type === "error") {
      console.warn("inspector:", msg.message);
      this.onError(msg);
      return;
    }
    if (msg.type === "update" && (msg.epoch !== this.epoch || msg.seq !== this.seq + 1)) {
      this.resyncs += 1;
      this.epoch = null;
      this.send({ type: "resync" });
      return;
    }
    if (msg.type !== "snapshot" && msg.type !== "update") return;
    this.epoch = msg.epoch;
    this.seq = msg.seq;
    this.frames += 1;
    this.lastFrameAt = performance.now();
    performance.mark("qi-apply-start");
    this.onFrame(msg, msg.type === "snapshot");
    performance.measure("qi-apply", "qi-apply-start");
    performance.clearMarks("qi-apply-start");
    if (this.frames % MEASURES_KEPT === 0) performance.clearMeasures("qi-apply");
    this.send({ type: "ack", seq: msg.seq });
    if (!this.paused) this.setState("live");
  }

  setState(state) {
    if (this.state === state) return;
    this.state = state;
    this.onState(state);
  }

  age() {
    return this.lastFrameAt === null ? null : (performance.now() - this.lastFrameAt) / 1000;
  }
}
