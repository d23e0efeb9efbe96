import { parseArgs } from 'node:util'
import { ClientRegistry, LmdbClientStore, SharedClientStore, clientIdentityProblem, generateSecret, hashSecret, type ClientStore } from '../auth/index.js'
import { isCluster, type Config } from '../config/index.js'
import { openState, type StateStore } from '../state/index.js'
import { UsageError } from './usage.js'

const USAGE = `usage:
  gateway clients add <client_id> --audience A [--audience B] --scope S [--scope T] [--tenant T]
  gateway clients list
  gateway clients remove <client_id>
  gateway clients rotate <client_id>
  gateway clients hash            (reads a secret on stdin, prints its client_secret_hash)`

/**
 * `gateway clients ...`: manages clients in LMDB, or in S3 where every node
 * of a cluster reads them (BUS=kafka and STORAGE=s3); a new secret is
 * printed once and never stored.
 */
export async function clientsCommand (config: Config, argv: string[], out: (line: string) => void, warn: (line: string) => void = line => { process.stderr.write(line + '\n') }): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { audience: { type: 'string', multiple: true }, scope: { type: 'string', multiple: true }, tenant: { type: 'string' } }
  })
  const [action, clientId] = positionals
  if (action === 'hash') {
    const secret = (await readStdin()).trim()
    if (!secret) throw new Error('no secret on stdin')
    out(await hashSecret(secret))
    return 0
  }
  if (action !== 'list' && !clientId) throw new UsageError(USAGE)
  const state = openState(config.dataDir)
  const clients = await openClientStore(config, state).catch(async err => { await state.close(); throw err })
  const registry = new ClientRegistry(clients.store)
  const where = isCluster(config) ? `s3://${config.s3Bucket}/_gateway/auth/clients` : config.dataDir
  try {
    switch (action) {
      case 'add': {
        if (!values.audience?.length || !values.scope?.length) throw new UsageError(USAGE)
        const tenant = values.tenant ?? clientId!
        const problem = clientIdentityProblem(clientId!, tenant)
        if (problem !== undefined) throw new UsageError(`${problem} (docs/identifiers.md)`)
        if (await registry.get(clientId!)) throw new Error(`client ${clientId} exists; use rotate for a new secret`)
        const refused = values.audience.filter(a => !config.authAudience.includes(a))
        if (refused.length > 0) warn(`gateway: note: ingest accepts the audiences ${config.authAudience.join(', ')} (AUTH_AUDIENCE); tokens this client gets for ${refused.join(', ')} will be refused there with 401`)
        const secret = generateSecret()
        await registry.put({ client_id: clientId!, client_secret_hash: await hashSecret(secret), audiences: values.audience, scopes: values.scope, tenant, created_at: new Date().toISOString() })
        out(JSON.stringify({ client_id: clientId, client_secret: secret, audiences: values.audience, scopes: values.scope, tenant }))
        return 0
      }
      case 'list':
        for (const c of await registry.list()) out(JSON.stringify({ client_id: c.client_id, audiences: c.audiences, scopes: c.scopes, tenant: c.tenant, created_at: c.created_at }))
        return 0
      case 'remove':
        if (!await registry.remove(clientId!)) throw new Error(`no client ${clientId} in ${where}`)
        out(JSON.stringify({ removed: clientId }))
        return 0
      case 'rotate': {
        const existing = await registry.get(clientId!)
        if (!existing) throw new Error(`no client ${clientId} in ${where}`)
        const secret = generateSecret()
        await registry.put({ ...existing, client_secret_hash: await hashSecret(secret) })
        out(JSON.stringify({ client_id: clientId, client_secret: secret }))
        return 0
      }
      default:
        throw new UsageError(USAGE)
    }
  } finally {
    clients.close()
    await state.close()
  }
}

async function readStdin (): Promise<string> {
  const chunks: Buffer[] = []
  for await (const c of process.stdin) chunks.push(c as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

/** The clients to manage: in the cluster's S3, or in this node's LMDB. */
async function openClientStore (config: Config, state: StateStore): Promise<{ store: ClientStore, close(): void }> {
  if (!isCluster(config)) return { store: new LmdbClientStore(state), close: () => undefined }
  // Loaded only here: the S3 client would add a third of a second to every command on a single node.
  const { SharedDocuments } = await import('../cluster/index.js')
  const documents = new SharedDocuments(config)
  await documents.start()
  return { store: new SharedClientStore(documents), close: () => documents.stop() }
}
