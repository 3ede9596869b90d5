// A webhook receiver on 127.0.0.1 that checks every delivery with Basis Theory's own
// verification snippet (developers.basistheory.com, docs/api/webhooks/webhooks.mdx), copied
// unchanged but for its `publicKey`, which is the vault's `GET /webhooks/signing-key`.
import http from 'node:http';
import { sdkRequire } from './harness.mjs';

const crypto = sdkRequire('crypto');
const stringify = sdkRequire('json-stable-stringify');

export async function startReceiver(publicKeyPem) {
  const publicKey = publicKeyPem;

  // ---- Basis Theory's snippet, as published ----
  const verifyWebhook = (webhookRequest) => {
    const body = JSON.parse(webhookRequest.request.body);
    const signature = webhookRequest.request.headers['BT-SIGNATURE'];
    const verifier = crypto.createVerify('SHA256');

    verifier.update(stringify(body));

    const isVerified = verifier.verify(
      {
        key: publicKey,
        padding: crypto.constants.RSA_PKCS1_PSS_PADDING,
      },
      Buffer.from(signature, 'base64')
    );

    return isVerified;
  };
  // ---- end of the snippet ----

  const received = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      // Node lower-cases header names; the snippet reads them as Basis Theory sends them.
      const headers = {
        'BT-SIGNATURE': req.headers['bt-signature'],
        'BT-SIGNATURE-VERSION': req.headers['bt-signature-version'],
      };
      let verified = false;
      try {
        verified = verifyWebhook({ request: { body, headers } });
      } catch (e) {
        verified = false;
      }
      received.push({ body: JSON.parse(body), headers, verified });
      res.writeHead(200).end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}/webhooks`;
  return {
    url,
    received,
    async waitFor(predicate, ms = 30000) {
      const start = Date.now();
      while (!predicate(received)) {
        if (Date.now() - start > ms) {
          throw new Error(`not within ${ms} ms; received ${JSON.stringify(received.map((r) => r.body.event.type))}`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    close: () => server.close(),
  };
}
