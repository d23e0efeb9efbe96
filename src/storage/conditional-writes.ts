import { randomUUID } from 'node:crypto'
import { ConfigError, type Config } from '../config/index.js'

/**
 * Conditional writes of small documents, as the cluster makes them
 * (`SharedDocuments`): undefined when the condition failed.
 */
export interface ConditionalDocuments {
  create(key: string, value: unknown): Promise<string | undefined>
  replace(key: string, value: unknown, etag: string): Promise<string | undefined>
  delete(key: string): Promise<void>
}

/** An ETag no object has: S3's are an MD5 or an MD5 and a part count. */
const NO_SUCH_ETAG = '"00000000000000000000000000000000"'

/**
 * Refuses to start a cluster on an object store that does not honour the
 * conditions its nodes agree by: `If-None-Match: *` (first writer wins: one
 * key per epoch, one claim per event) and `If-Match` (replace only what was
 * read). A store that ignores them answers every write 200 and the nodes
 * would each believe they won. Checked with a probe document under
 * `probe/`, removed after; a failure is a ConfigError, which the start
 * prints as one line naming the endpoint and the bucket.
 */
export async function checkConditionalWrites (documents: ConditionalDocuments, config: Pick<Config, 's3Endpoint' | 's3Region' | 's3Bucket'>): Promise<void> {
  const key = `probe/${randomUUID()}.json`
  let problem: string | undefined
  try {
    problem = await probe(documents, key)
  } catch (err) {
    problem = `failed the check of conditional writes: ${String((err as Error).message).replace(/\s+/g, ' ')}`
  } finally {
    await documents.delete(key).catch(() => undefined)
  }
  if (problem === undefined) return
  const where = `${config.s3Endpoint ?? `AWS S3 in ${config.s3Region}`} (bucket ${config.s3Bucket})`
  throw new ConfigError(`the object store at ${where} ${problem}; nodes of a cluster (BUS=kafka, STORAGE=s3) agree on keys, clients and claims through both conditions (docs/cluster-state.md)`)
}

/** What is wrong with the store's conditional writes, or undefined when both hold. */
async function probe (documents: ConditionalDocuments, key: string): Promise<string | undefined> {
  const etag = await documents.create(key, { probe: 1 })
  if (etag === undefined) return 'refused PutObject with If-None-Match: * on a new key'
  if (await documents.create(key, { probe: 2 }) !== undefined) return 'ignores If-None-Match: * on PutObject (a second create of one key succeeded)'
  if (await documents.replace(key, { probe: 3 }, NO_SUCH_ETAG) !== undefined) return 'ignores If-Match on PutObject (a write naming another ETag succeeded)'
  if (await documents.replace(key, { probe: 4 }, etag) === undefined) return 'refused PutObject with If-Match naming the current ETag'
  return undefined
}
