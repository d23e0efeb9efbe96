import type { Logger } from 'pino'
import { Registry, collectDefaultMetrics } from 'prom-client'
import { AuthService, authOpenApi, LmdbClientStore, LmdbKeyVault, Revocation, SharedClientStore, SharedKeyVault, type AuthStores } from './auth/index.js'
import { hostname } from 'node:os'
import { createBus, createKafkaClient, measurePublish } from './bus/index.js'
import { SharedDocuments } from './cluster/index.js'
import { isCluster, isLoopbackHost, startupStep, type Config } from './config/index.js'
import { HttpServer, bodyBudget, browserGuard, loadUws, type HttpServerOptions } from './http/index.js'
import { IdleCollector, Readiness, buildInfo, youngGenerationCapped, coalescedMetrics, capYoungGeneration, disablePretenuring, metricsSource, opsOpenApi, opsRoutes, openApiRoute, workerSlot, type OpenApiPart } from './ops/index.js'
import { EvidenceService, LocalLedger, LocalUploadStates, PUBLISH_WAIT_MS, SharedLedger, SharedUploadStates, evidenceOpenApi, type EvidenceLedger } from './evidence/index.js'
import { consoleRoutes } from './console/index.js'
import { FrontDoor, frontDoorOpenApi } from './frontdoor/index.js'
import { HarnessService, harnessOpenApi, type HarnessCluster } from './runs/index.js'
import { STREAM_PATH, TelemetryService, telemetryOpenApi } from './telemetry/index.js'
import { checkConditionalWrites, createObjectStore } from './storage/index.js'
import { checkState, openState, Incarnation } from './state/index.js'

export interface Gateway {
  /** Bound ports (useful with PORT=0 in tests). */
  readonly port: number | undefined
  readonly harnessPort: number | undefined
  /** Stops accepting, lets in-flight requests finish up to SHUTDOWN_TIMEOUT_MS, then closes everything. */
  stop(): Promise<{ drained: boolean }>
}

/** Wires the capabilities named by ROLES together. Nothing else imports across capabilities. */
export async function startGateway (config: Config, log: Logger): Promise<Gateway> {
  disablePretenuring()
  capYoungGeneration(config.heapSemiSpaceMb)
  if (!youngGenerationCapped()) log.info({ HEAP_SEMI_SPACE_MB: config.heapSemiSpaceMb }, `HEAP_SEMI_SPACE_MB is not applied: Node ${process.versions.node} takes it only from node's command line (--max-semi-space-size=${config.heapSemiSpaceMb}, as npm start, the image and WORKERS > 1 give it)`)
  const { uws, build: uwsBuild } = loadUws(config.uwsAllowFallback)
  const roles = new Set(config.roles)
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  buildInfo(registry, uwsBuild)
  const metrics = coalescedMetrics(metricsSource(registry))
  const metricsAccess = { token: config.metricsToken, addressHeader: config.authClientAddressHeader }
  if (roles.has('harness') && !config.svcHarnessAuthEnabled && !isLoopbackHost(config.host)) {
    log.warn({ host: config.host }, 'HARNESS_ALLOW_OPEN=true: /runs* take no token and listen beyond loopback')
  }

  const dataDir = `DATA_DIR=${config.dataDir}`
  const writable = `DATA_DIR must be a directory that user ${process.getuid?.() ?? '?'} can create, read and write`
  const state = await startupStep(`${dataDir}: cannot open the state database`, writable, () => openState(config.dataDir))
  // Whatever this process claims (event_ids, partial files) is free once it is gone.
  const incarnation = await Incarnation.start(state)
  const readiness = new Readiness()
  readiness.add('lmdb', () => checkState(state))
  const bus = await createBus(config, state, log)
  measurePublish(bus, registry)
  await startupStep(config.bus === 'kafka' ? `BUS=kafka, KAFKA_BROKERS=${config.kafkaBrokers?.join(',')}: cannot start the bus` : `${dataDir}: cannot start the local bus`,
    config.bus === 'kafka' ? 'check that the brokers answer and the credentials (KAFKA_SASL_MECHANISM, KAFKA_TLS) match them' : writable, () => bus.start())
  // Login and evidence serve through a broker outage (the ledger keeps what it accepts): telemetry's pool asks /health/ready/bus.
  readiness.add('bus', () => bus.probe(), { required: false })
  const stoppers: Array<() => Promise<void> | void> = [() => incarnation.stop(), () => bus.close()]
  let authStores: AuthStores = { clients: new LmdbClientStore(state), keys: new LmdbKeyVault(state) }
  let documents: SharedDocuments | undefined
  if (isCluster(config)) {
    documents = new SharedDocuments(config)
    await startupStep(s3Where(config, 'cannot reach the bucket the cluster shares'), S3_FIX, () => documents!.start())
    await startupStep(s3Where(config, 'cannot check conditional writes'), S3_FIX, () => checkConditionalWrites(documents!, config))
    // Stopped after everything that uses it (stoppers run in reverse).
    stoppers.push(() => documents!.stop())
    authStores = { clients: new SharedClientStore(documents), keys: new SharedKeyVault(documents) }
  }
  // Streams that never end by themselves (the run watch), ended as the servers stop taking requests.
  const closing: Array<() => void> = []
  // Work that may take long on a large DATA_DIR, begun once every server listens.
  const afterListen: Array<() => void> = []

  // One budget for the JSON bodies of every server in the process.
  const http: Omit<HttpServerOptions, 'name'> = {
    logger: log,
    registry,
    uws,
    bodyBudget: bodyBudget(config.httpBodyBufferBytes, registry),
    openBodyBudget: bodyBudget(config.httpOpenBodyBufferBytes, registry, true),
    bodyMinBytesPerS: config.httpBodyMinBytesPerS,
    drainMaxBytes: config.httpDrainMaxBytes,
    drainTimeoutMs: config.httpDrainTimeoutMs
  }
  const servers: HttpServer[] = []
  // A supervised worker shares its ports with its siblings; any other process holds them alone.
  const exclusive = workerSlot() === undefined
  const openApi: OpenApiPart[] = [opsOpenApi(true)]
  let main: HttpServer | undefined
  let auth: AuthService | undefined
  // Login, ingest and the front door share PORT, and all need the signing keys.
  if (roles.has('auth') || roles.has('ingest') || roles.has('frontdoor')) {
    main = new HttpServer({ ...http, name: 'gateway' })
    servers.push(main)
    opsRoutes(readiness, metrics, metricsAccess).forEach(r => main!.route(r))
    auth = new AuthService(config, authStores, log, registry)
    await auth.start()
    stoppers.push(() => auth!.stop())
    if (roles.has('auth')) {
      auth.routes().forEach(r => main!.route(r))
      openApi.push(authOpenApi)
    }
  }
  if (roles.has('ingest')) {
    const telemetry = new TelemetryService(config, bus, auth!.verifier, registry)
    telemetry.routes().forEach(r => main!.route(r))
    const stream = telemetry.stream(log.child({ component: 'telemetry-stream' }), registry)
    main!.websocket(STREAM_PATH, stream.behavior())
    closing.push(() => stream.close())
    openApi.push(telemetryOpenApi(config.telemetryMetricsSchemas))
    const objects = createObjectStore(config, state, incarnation, log)
    await startupStep(config.storage === 's3' ? s3Where(config, 'cannot start the object store') : `${dataDir}: cannot start the object store`,
      config.storage === 's3' ? S3_FIX : writable, () => objects.start())
    stoppers.push(() => objects.stop?.())
    readiness.add('storage', () => objects.probe())
    const ledger: EvidenceLedger = documents
      ? new SharedLedger({ documents, bus, ttlMs: config.idempotencyTtlS * 1000, publishWaitMs: PUBLISH_WAIT_MS, self: incarnation, discard: folder => objects.deletePrefix?.(folder) ?? Promise.resolve(0), log: log.child({ component: 'evidence-ledger' }) })
      : new LocalLedger(state, bus, config.idempotencyTtlS, incarnation, PUBLISH_WAIT_MS, log)
    const uploads = documents ? new SharedUploadStates(documents) : new LocalUploadStates(state)
    const evidence = new EvidenceService(config, ledger, objects, auth!.verifier, log, registry, new IdleCollector(), { states: uploads, owner: incarnation })
    evidence.routes().forEach(r => main!.route(r))
    evidence.start()
    stoppers.push(() => evidence.stop())
    readiness.add('outbox', () => evidence.outboxState())
    openApi.push(evidenceOpenApi)
  }
  if (roles.has('frontdoor')) openApi.push(frontDoorOpenApi(harnessOpenApi))
  // Each port describes its own routes, at the address its clients use (known once it listens).
  let port: number | undefined
  main?.route(openApiRoute(openApi, () => ({ url: `http://${advertisedHost(config)}:${port}`, description: 'PORT' }), roles.has('auth') ? '/api/v1/login' : undefined))

  let harnessPort: number | undefined
  let harnessServer: HttpServer | undefined
  if (roles.has('harness')) {
    // In a cluster the other members forward requests for this process's runs to its own listener (every worker has one).
    let peer: HttpServer | undefined
    let cluster: HarnessCluster | undefined
    if (isCluster(config)) {
      peer = new HttpServer({ ...http, name: 'harness_peer', errors: 'harness' })
      servers.push(peer)
      const port = await peer.listen(config.host, config.harnessPeerPort === 0 ? 0 : config.harnessPeerPort + (workerSlot() ?? 1) - 1, { exclusive: true, setting: 'HARNESS_PEER_PORT' })
      cluster = { kafka: await createKafkaClient(config, log), url: `http://${advertisedHost(config)}:${port}` }
    }
    // A process without the auth role still reads the client store its node (or cluster) shares.
    const revocation = auth?.revocation ?? new Revocation(clientId => authStores.clients.get(clientId))
    const harness = new HarnessService(config, state, bus, log, incarnation, registry, cluster, revocation)
    await harness.start()
    stoppers.push(() => harness.stop())
    closing.push(() => harness.closeWatchers())
    // Names are answered as any when a token guards /runs*: a rebinding page has none (docs/harness.md).
    const hosts = config.harnessAllowedHosts.length > 0 ? config.harnessAllowedHosts : config.svcHarnessAuthEnabled ? ['*'] : []
    const guard = browserGuard({ hosts, origins: config.harnessAllowedOrigins })
    const server = new HttpServer({ ...http, name: 'harness', errors: 'harness', guard })
    servers.push(server)
    const harnessReadiness = new Readiness()
    harnessReadiness.add('lmdb', () => checkState(state))
    harnessReadiness.add('jwks', () => harness.probe())
    // On one node runs commit to LMDB and are published later; in a cluster the runs group says what Kafka allows.
    harnessReadiness.add('bus', () => harness.busState(), { required: false })
    if (cluster) harnessReadiness.add('runs', () => harness.clusterState())
    // `/metrics` on one port of the process, so that a Prometheus scraping both counts each series once.
    opsRoutes(harnessReadiness, main ? undefined : metrics, metricsAccess).forEach(r => server.route(r))
    server.route(openApiRoute([opsOpenApi(!main), harnessOpenApi], () => ({ url: `http://${advertisedHost(config)}:${harnessPort}`, description: 'HARNESS_PORT' }), undefined))
    harness.routes().forEach(r => server.route(r))
    if (peer) harness.routes(true).forEach(r => peer.route(r))
    consoleRoutes(() => metrics.text()).forEach(r => server.route(r))
    harnessPort = await server.listen(config.host, config.harnessPort, { exclusive, setting: 'HARNESS_PORT' })
    harnessServer = server
    afterListen.push(() => harness.afterListen())
  }

  if (roles.has('frontdoor')) {
    // This process's harness serves the door in-process: a loopback connection per fronted stream would cost three descriptors.
    const harness = config.harnessUrl ?? harnessServer ?? `http://127.0.0.1:${config.harnessPort}`
    new FrontDoor(config, auth!.keys, harness, auth!.revocation).routes().forEach(r => main!.route(r))
  }

  port = main ? await main.listen(config.host, config.port, { exclusive, setting: 'PORT' }) : undefined
  for (const then of afterListen) then()
  log.info({ port, harnessPort, roles: [...roles], uws: uwsBuild, bus: bus.kind, storage: config.storage, cluster: isCluster(config), incarnation: incarnation.id }, 'gateway listening')

  return {
    port,
    harnessPort,
    async stop () {
      let timer: NodeJS.Timeout | undefined
      const deadline = new Promise<false>(resolve => { timer = setTimeout(() => resolve(false), config.shutdownTimeoutMs) })
      const closed = Promise.all(servers.map(s => s.close()))
      for (const close of closing) close()
      const drained = await Promise.race([closed.then(() => true as const), deadline])
      clearTimeout(timer)
      if (!drained) log.warn({ inFlight: servers.reduce((n, s) => n + s.inFlightRequests, 0) }, 'shutdown deadline passed with requests in flight')
      for (const stop of stoppers.reverse()) await stop()
      // Requests the stoppers cut short (uploads past the deadline, answered
      // 503) are answered once the rest of their body is drained: as bounded.
      if (!drained) await Promise.race([closed, new Promise(resolve => { timer = setTimeout(resolve, config.httpDrainTimeoutMs) })])
      clearTimeout(timer)
      await state.close()
      return { drained }
    }
  }
}

const S3_FIX = 'check that the bucket exists, S3_ENDPOINT (and S3_FORCE_PATH_STYLE for MinIO) reach it, and the credentials (AWS_ACCESS_KEY_ID) may read and write it'

function s3Where (config: Config, what: string): string {
  return `S3_BUCKET=${config.s3Bucket} at ${config.s3Endpoint ?? `AWS (${config.s3Region})`}: ${what}`
}

/** Where the other members of a cluster reach this process: CLUSTER_ADVERTISED_HOST, or HOST unless it listens everywhere. */
function advertisedHost (config: Config): string {
  const host = config.clusterAdvertisedHost ?? (config.host === '0.0.0.0' || config.host === '::' || config.host === '' ? hostname() : config.host)
  // An IPv6 literal (a pod IP of an IPv6 cluster) goes in brackets in a URL.
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host
}
