// Connects to the broker (?url=..., default /stomp on this page's own server), receives
// what a TCP client left on /queue/browser.in (?expect=2 when it left nothing), echoes a text and a binary body through
// /queue/browser.echo, leaves a message for the TCP client on /queue/browser.out, and
// writes what happened into #result as JSON (body[data-done] marks the end).
'use strict';

const params = new URLSearchParams(location.search);
const url = params.get('url') || `ws://${location.host}/stomp`;
// Messages to wait for: the two echoes, and one from the TCP client unless told otherwise.
const expected = Number(params.get('expect') || 3);
const result = { connected: false, received: [] };
const binary = new Uint8Array(256).map((_, i) => i);

function finish() {
  document.getElementById('result').textContent = JSON.stringify(result);
  document.body.dataset.done = 'true';
}

const client = new StompJs.Client({ brokerURL: url, reconnectDelay: 0 });

client.onConnect = (frame) => {
  result.connected = true;
  result.version = frame.headers.version;
  result.subprotocol = client.webSocket.protocol;
  const record = (message) => {
    const isText = message.headers['content-type'] !== 'application/octet-stream';
    result.received.push({
      destination: message.headers.destination,
      body: isText ? message.body : Array.from(message.binaryBody).join(','),
      colour: message.headers.colour,
    });
    if (result.received.length === expected) {
      client.publish({ destination: '/queue/browser.out', body: 'from the page', headers: { colour: 'green', receipt: 'out' } });
    }
  };
  client.watchForReceipt('out', () => {
    client.deactivate().then(finish);
  });
  client.subscribe('/queue/browser.in', record);
  client.subscribe('/queue/browser.echo', record);
  client.publish({ destination: '/queue/browser.echo', body: 'echo żółw 🐢' });
  client.publish({
    destination: '/queue/browser.echo',
    binaryBody: binary,
    headers: { 'content-type': 'application/octet-stream' },
  });
};

client.onStompError = (frame) => {
  result.error = frame.headers.message;
};

client.onWebSocketClose = (event) => {
  result.closeCode = event.code;
  if (!result.connected) finish();
};

client.activate();
