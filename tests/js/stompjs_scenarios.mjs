// stomp.js (@stomp/stompjs) against a real stompd over WebSocket, under Node with the
// `ws` package as the WebSocket.  Run by tests/integration/test_ws_stompjs.py:
//
//   node stompjs_scenarios.mjs SCENARIO WS_URL
//
// Each scenario prints JSON lines: events the Python side may wait for
// ({"event": ...}) and, last, {"result": ...}.  Failures print {"error": ...} and exit 1.
import { createHash } from 'node:crypto';
import { createInterface } from 'node:readline';
import { Client, Versions } from '@stomp/stompjs';
import WebSocket from 'ws';

// stomp.js opens `new WebSocket(brokerURL, ['v10.stomp', 'v11.stomp', 'v12.stomp'])`.
Object.assign(globalThis, { WebSocket });

const [scenario, url] = process.argv.slice(2);
const TIMEOUT_MS = 20000;

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function sha256(bytes) {
  return createHash('sha256').update(bytes).digest('hex');
}

function withTimeout(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), TIMEOUT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// A client that is connected when the promise resolves; errors reject it.
function connect(options = {}) {
  return withTimeout(
    new Promise((resolve, reject) => {
      const client = new Client({
        brokerURL: url,
        reconnectDelay: 0,
        heartbeatIncoming: 0,
        heartbeatOutgoing: 0,
        ...options,
      });
      client.onConnect = (frame) => resolve({ client, connected: frame });
      client.onStompError = (frame) => reject(new Error(`ERROR ${frame.headers.message}: ${frame.body}`));
      client.onWebSocketError = () => reject(new Error('WebSocket error'));
      client.activate();
    }),
    'connect',
  );
}

// Resolves with the first `n` messages of a subscription.
function collect(client, destination, n, headers = {}, onMessage = (m) => m) {
  return withTimeout(
    new Promise((resolve) => {
      const got = [];
      client.subscribe(
        destination,
        (message) => {
          const keep = onMessage(message);
          if (keep) got.push(keep);
          if (got.length === n) resolve(got);
        },
        headers,
      );
    }),
    `${n} messages from ${destination}`,
  );
}

function receipt(client, id) {
  return withTimeout(new Promise((resolve) => client.watchForReceipt(id, resolve)), `receipt ${id}`);
}

const scenarios = {
  // CONNECT with each version alone (subprotocol and accept-version), then a round trip.
  async versions() {
    const out = [];
    for (const version of ['1.0', '1.1', '1.2']) {
      const { client, connected } = await connect({ stompVersions: new Versions([version]) });
      const destination = `/queue/js.versions.${version}`;
      const messages = collect(client, destination, 1);
      client.publish({ destination, body: `hello ${version}`, headers: { colour: 'blue' } });
      const [message] = await messages;
      out.push({
        version: connected.headers.version ?? '1.0',
        subprotocol: client.webSocket.protocol,
        body: message.body,
        colour: message.headers.colour,
      });
      await client.deactivate();
    }
    return out;
  },

  // client-individual acks; a NACK redelivers with redelivered:true (ActiveMQ's header).
  async acks() {
    const { client } = await connect();
    const destination = '/queue/js.acks';
    for (const n of ['1', '2', '3']) client.publish({ destination, body: `m${n}` });
    const seen = [];
    await collect(client, destination, 3, { ack: 'client-individual' }, (message) => {
      seen.push([message.body, message.headers.redelivered === 'true']);
      if (message.body === 'm2' && message.headers.redelivered !== 'true') {
        message.nack();
        return null;
      }
      message.ack();
      return message;
    });
    // Nothing is left for a new consumer: every message was acknowledged.
    const r = 'after-acks';
    const sub = client.subscribe(destination, (m) => seen.push(['unexpected', m.body]), { receipt: r });
    await receipt(client, r);
    sub.unsubscribe();
    await client.deactivate();
    return seen;
  },

  // SENDs in a committed and in an aborted transaction.
  async transactions() {
    const { client } = await connect();
    const destination = '/queue/js.tx';
    const messages = collect(client, destination, 3);
    const committed = client.begin();
    client.publish({ destination, body: 'tx1-a', headers: { transaction: committed.id } });
    client.publish({ destination, body: 'tx1-b', headers: { transaction: committed.id } });
    const aborted = client.begin();
    client.publish({ destination, body: 'tx2', headers: { transaction: aborted.id } });
    aborted.abort();
    committed.commit();
    client.publish({ destination, body: 'end' });
    const bodies = (await messages).map((m) => m.body);
    await client.deactivate();
    return bodies;
  },

  // RECEIPTs for SUBSCRIBE, SEND and DISCONNECT.
  async receipts() {
    const { client } = await connect();
    const ids = [];
    const sub = receipt(client, 'sub-1');
    client.subscribe('/queue/js.receipts', () => {}, { receipt: 'sub-1' });
    ids.push((await sub).headers['receipt-id']);
    const sent = receipt(client, 'send-1');
    client.publish({ destination: '/queue/js.receipts', body: 'x', headers: { receipt: 'send-1' } });
    ids.push((await sent).headers['receipt-id']);
    await client.deactivate();
    return ids;
  },

  // Heart-beats both ways at 500 ms: the broker's arrive, and ours keep it from
  // closing us (its grace is 1.5 intervals) for five intervals.  Not shorter: on a
  // loaded machine a node process can be off the CPU for longer than 1.5 x 100 ms.
  async heartbeats() {
    let received = 0;
    let closed = null;
    const { client, connected } = await connect({
      heartbeatIncoming: 500,
      heartbeatOutgoing: 500,
      onHeartbeatReceived: () => {
        received += 1;
      },
      onWebSocketClose: (event) => {
        closed = event.code;
      },
    });
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const r = receipt(client, 'alive');
    client.publish({ destination: '/queue/js.hb', body: 'x', headers: { receipt: 'alive' } });
    await r;
    const closedEarly = closed;
    await client.deactivate();
    return { negotiated: connected.headers['heart-beat'], received, closedEarly };
  },

  // A 1 MiB UTF-8 text body and a 1 MiB binary body (every byte value, NULs included),
  // sent whole and, with splitLargeFrames, cut into 8 KiB WebSocket messages.
  async bodies() {
    const text = 'żółw 🐢 '.repeat(1 << 16);
    const binary = new Uint8Array(1 << 20);
    for (let i = 0; i < binary.length; i++) binary[i] = i % 256;
    const out = {};
    for (const split of [false, true]) {
      const { client } = await connect({ splitLargeFrames: split, maxWebSocketChunkSize: 8 * 1024 });
      const destination = `/queue/js.bodies.${split}`;
      const messages = collect(client, destination, 2);
      client.publish({ destination, body: text });
      client.publish({ destination, binaryBody: binary, headers: { 'content-type': 'application/octet-stream' } });
      const [t, b] = await messages;
      out[split ? 'split' : 'whole'] = {
        text: t.body === text,
        textBytes: new TextEncoder().encode(t.body).length,
        binary: sha256(b.binaryBody) === sha256(binary),
        binaryLength: b.binaryBody.length,
        contentLength: b.headers['content-length'],
      };
      await client.deactivate();
    }
    return out;
  },

  // Persistent message, broker restart, automatic reconnect, message still there.  The
  // Python side restarts the broker when it reads {"event": "restart-me"} and answers
  // "restarted" on stdin.
  async reconnect() {
    const destination = '/queue/js.reconnect';
    const { client } = await connect({ reconnectDelay: 100 });
    let connects = 1;
    const reconnected = new Promise((resolve) => {
      client.onConnect = () => {
        connects += 1;
        resolve();
      };
    });
    const stored = receipt(client, 'stored');
    client.publish({ destination, body: 'kept', headers: { persistent: 'true', receipt: 'stored' } });
    await stored;
    const lines = createInterface({ input: process.stdin });
    const restarted = new Promise((resolve) => lines.once('line', resolve));
    emit({ event: 'restart-me' });
    await withTimeout(restarted, 'the broker restart');
    await withTimeout(reconnected, 'reconnect');
    const [message] = await collect(client, destination, 1);
    lines.close();
    await client.deactivate();
    return { connects, body: message.body, persistent: message.headers.persistent };
  },

  // docs/high-availability.md's failover: WS_URL is a comma-separated list of a pair's brokers (the
  // standby's first, it refuses the connection); every (re)connect takes the next one.
  // The Python side kills the master when it reads {"event": "kill-me"} and answers
  // "killed" on stdin; the message stored on the master is there after the takeover.
  async failover() {
    const urls = url.split(',');
    let next = 0;
    let connects = 0;
    let connected;
    let reconnected;
    const first = new Promise((resolve) => { connected = resolve; });
    const second = new Promise((resolve) => { reconnected = resolve; });
    const client = new Client({
      reconnectDelay: 200,
      heartbeatIncoming: 0,
      heartbeatOutgoing: 0,
      beforeConnect: (c) => { c.brokerURL = urls[next++ % urls.length]; },
      onConnect: () => {
        connects += 1;
        (connects === 1 ? connected : reconnected)(client.brokerURL);
      },
    });
    client.activate();
    const before = await withTimeout(first, 'connect');
    const destination = '/queue/js.failover';
    const stored = receipt(client, 'stored');
    client.publish({ destination, body: 'kept', headers: { persistent: 'true', receipt: 'stored' } });
    await stored;
    const lines = createInterface({ input: process.stdin });
    const killed = new Promise((resolve) => lines.once('line', resolve));
    emit({ event: 'kill-me' });
    await withTimeout(killed, 'the kill');
    const after = await withTimeout(second, 'reconnect to the new master');
    const [message] = await collect(client, destination, 1);
    lines.close();
    await client.deactivate();
    return { before, after, body: message.body };
  },

  // With a TCP client on the Python side: consume what it left on /queue/tcp.to-js,
  // produce a binary body with custom headers for it on /queue/js.to-tcp.
  async exchange() {
    const { client } = await connect();
    const [message] = await collect(client, '/queue/tcp.to-js', 1);
    const body = new Uint8Array(4096);
    for (let i = 0; i < body.length; i++) body[i] = (i * 7) % 256;
    const sent = receipt(client, 'to-tcp');
    client.publish({
      destination: '/queue/js.to-tcp',
      binaryBody: body,
      headers: { receipt: 'to-tcp', colour: 'green', 'with-colon': 'a:b', unicode: 'żółw' },
    });
    await sent;
    await client.deactivate();
    return {
      received: { sha256: sha256(message.binaryBody), length: message.binaryBody.length, colour: message.headers.colour },
      sent: { sha256: sha256(body) },
    };
  },

  // An ERROR frame reaches onStompError; after a frame refused for what it means the
  // connection goes on (a message still arrives); after a CONNECT refused, the close code
  // and reason reach the page.
  async error() {
    const result = {};
    await withTimeout(
      new Promise((resolve, reject) => {
        const client = new Client({ brokerURL: url, reconnectDelay: 0 });
        client.onConnect = () => {
          client.subscribe('/queue/', () => {});
          client.subscribe('/queue/stompjs.after', (message) => {
            result.after = message.body;
            client.deactivate().then(resolve, reject);
          });
          client.publish({ destination: '/queue/stompjs.after', body: 'still here' });
        };
        client.onStompError = (frame) => {
          result.refused = frame.headers.message;
        };
        client.activate();
      }),
      'the refusal and a message after it',
    );
    await withTimeout(
      new Promise((resolve, reject) => {
        const client = new Client({ brokerURL: url, reconnectDelay: 0, connectHeaders: { 'stompd.network': ',' } });
        client.onStompError = (frame) => {
          result.message = frame.headers.message;
        };
        client.onWebSocketClose = (event) => {
          result.code = event.code;
          result.reason = event.reason;
          client.deactivate().then(resolve, reject);
        };
        client.activate();
      }),
      'the ERROR and the close',
    );
    return result;
  },
};

try {
  if (!(scenario in scenarios)) throw new Error(`no scenario ${scenario}`);
  emit({ result: await scenarios[scenario]() });
  process.exit(0);
} catch (error) {
  emit({ error: String(error && error.stack ? error.stack : error) });
  process.exit(1);
}
