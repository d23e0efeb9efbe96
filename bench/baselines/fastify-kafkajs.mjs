// Baseline `fastify-kafkajs` of the `telemetry` scenario: POST /v1/asset/track
// as a user would otherwise write it with Fastify 5 and kafkajs 2.2.4, doing
// the gateway's work on the success path:
//
//   - bearer token: RS256 signature, issuer, audience, expiry checked with
//     jose's jwtVerify against a local public key (JWT_PUBLIC_KEY_FILE), then
//     the scope; every request, nothing cached (the gateway caches verified
//     tokens: see bench/README.md);
//   - headers X-Request-Id / X-Request-Timestamp and the body validated by
//     Fastify's route schemas, compiled by an ajv 8 set up like the gateway's
//     (src/validation/schema.ts: allErrors, verbose, strict, ajv-formats'
//     date-time, the `iso-date-time` format, the `x-error` annotation), with
//     the gateway's own AssetTrackingData schema from dist/;
//   - one Kafka message per request, the record plus client_id, received_at
//     and request_id, key asset_id, the gateway's headers, `await
//     producer.send({ acks: -1 })` before answering. The producer is kafkajs's
//     default one: NOT idempotent, requests in flight unbounded, so the
//     concurrent requests' sends overlap (an idempotent producer must not be
//     used that way, kafkajs #1005; serialising one-record sends would make
//     this a strawman);
//   - one access-log line per request at info, through pino set up as the
//     gateway sets it up (src/ops/logger.ts: asynchronous stdout destination,
//     ISO time, pid); Fastify's defaults (two lines per request, synchronous
//     writes) would cost it more.
//
// Environment: HOST, PORT (0: the kernel picks), LOG_LEVEL (info),
// KAFKA_BROKERS (host:port,...), TOPIC (bench.fastify.telemetry),
// TOPIC_PARTITIONS (6, the gateway's KAFKA_TOPIC_PARTITIONS default; the
// topic is created at start when missing), JWT_PUBLIC_KEY_FILE (SPKI PEM),
// JWT_ISSUER, JWT_AUDIENCE (evidence-gateway).
// Prints {"msg":"fastify-kafkajs listening","port":N} once the producer is
// connected and the port open; exits 0 on SIGTERM/SIGINT.
import { readFileSync } from 'node:fs'
import Fastify from 'fastify'
import pino from 'pino'
import { Kafka, Partitioners, logLevel } from 'kafkajs'
import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'
import { importSPKI, jwtVerify } from 'jose'
import { assetTrackingSchema, METRICS_SCHEMA } from '../../dist/telemetry/schema.js'
import { isIsoDateTimeWithZone } from '../../dist/validation/formats.js'

const env = process.env
const host = env.HOST ?? '127.0.0.1'
const port = Number(env.PORT ?? 0)
const topic = env.TOPIC ?? 'bench.fastify.telemetry'
const partitions = Number(env.TOPIC_PARTITIONS ?? 6)
const brokers = (env.KAFKA_BROKERS ?? '').split(',').map(s => s.trim()).filter(Boolean)
const issuer = env.JWT_ISSUER
const audience = env.JWT_AUDIENCE ?? 'evidence-gateway'
const SCOPE = 'asset:track:write'
if (brokers.length === 0) throw new Error('KAFKA_BROKERS is required')
if (!env.JWT_PUBLIC_KEY_FILE || !issuer) throw new Error('JWT_PUBLIC_KEY_FILE and JWT_ISSUER are required')
const publicKey = await importSPKI(readFileSync(env.JWT_PUBLIC_KEY_FILE, 'utf8'), 'RS256')

// ajv as the gateway sets it up (src/validation/schema.ts).
const ajv = new Ajv({ allErrors: true, verbose: true, strict: true, allowUnionTypes: true })
addFormats.default(ajv, ['date-time'])
ajv.addFormat('iso-date-time', isIsoDateTimeWithZone)
ajv.addKeyword({ keyword: 'x-error', schemaType: 'string' })

const headersSchema = {
  type: 'object',
  required: ['authorization', 'x-request-id', 'x-request-timestamp'],
  properties: {
    authorization: { type: 'string' },
    'x-request-id': { type: 'string', pattern: '^[\\x21-\\x7e]{1,200}$' },
    'x-request-timestamp': { type: 'string', pattern: '^\\d{1,12}$' }
  }
}

const kafka = new Kafka({ clientId: 'fastify-kafkajs-baseline', brokers, logLevel: logLevel.WARN })
const producer = kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner })

const app = Fastify({
  loggerInstance: pino({ level: env.LOG_LEVEL ?? 'info', base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ dest: 1, sync: false })),
  disableRequestLogging: true,
  requestIdHeader: 'x-request-id',
  bodyLimit: 1024 * 1024 // the gateway's TELEMETRY_MAX_BODY default
})
app.setValidatorCompiler(({ schema }) => ajv.compile(schema))

app.addHook('onResponse', (request, reply, done) => {
  request.log.info({ method: request.method, route: request.routeOptions.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime * 100) / 100 }, 'request')
  done()
})

// disableRequestLogging also silences Fastify's own log line of a 5xx; the gateway logs those.
app.addHook('onError', async (request, reply, error) => {
  request.log.error({ err: error }, error.message)
})

app.addHook('onRequest', async (request, reply) => {
  const token = /^Bearer +(\S+) *$/i.exec(request.headers.authorization ?? '')?.[1]
  if (!token) return reply.code(401).header('www-authenticate', 'Bearer').send({ status: 'error', message: 'missing bearer token' })
  let payload
  try {
    ({ payload } = await jwtVerify(token, publicKey, { issuer, audience, algorithms: ['RS256'], requiredClaims: ['exp'] }))
  } catch {
    return reply.code(401).header('www-authenticate', 'Bearer').send({ status: 'error', message: 'invalid token' })
  }
  if (typeof payload.scope !== 'string' || !payload.scope.split(' ').includes(SCOPE)) {
    return reply.code(403).send({ status: 'error', message: `token lacks scope ${SCOPE}` })
  }
  request.clientId = typeof payload.client_id === 'string' ? payload.client_id : payload.sub
})

app.post('/v1/asset/track', { schema: { headers: headersSchema, body: assetTrackingSchema([METRICS_SCHEMA]) } }, async (request, reply) => {
  const record = request.body
  const requestId = request.headers['x-request-id']
  await producer.send({
    topic,
    acks: -1,
    messages: [{
      key: record.asset_id,
      value: JSON.stringify({ ...record, client_id: request.clientId, received_at: new Date().toISOString(), request_id: requestId }),
      headers: { 'x-request-id': requestId, 'client-id': request.clientId, schema: 'asset-tracking-data@1' }
    }]
  })
  reply.header('x-request-id', requestId)
  return { status: 'success', message: 'message sent successfully' }
})

// Set-up a deployment would do once: the topic, then a connected producer.
const admin = kafka.admin()
await admin.connect()
if (!(await admin.listTopics()).includes(topic)) {
  await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: partitions }] })
}
await admin.disconnect()
await producer.connect()

await app.listen({ host, port })
// Not through the logger: the runner waits for this line whatever LOG_LEVEL says.
process.stdout.write(JSON.stringify({ msg: 'fastify-kafkajs listening', port: app.server.address().port, pid: process.pid }) + '\n')

let closing = false
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    if (closing) return
    closing = true
    const bye = () => process.exit(0)
    setTimeout(bye, 5000).unref()
    // kept-alive client sockets would hold app.close(); the producer is what matters.
    producer.disconnect().catch(() => {}).then(() => app.log.flush(bye))
  })
}
