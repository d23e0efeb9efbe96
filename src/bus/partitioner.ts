import { randomInt } from 'node:crypto'
import type { ICustomPartitioner } from 'kafkajs'

const SEED = 0x9747b28c
const M = 0x5bd1e995

/**
 * Java's `Utils.murmur2`, the hash Kafka's default partitioner puts keys
 * with, in 32-bit integer arithmetic as Java computes it. kafkajs's own
 * emulates it with 64-bit Long objects and a Buffer per key: about a
 * microsecond a record, 2% of a telemetry request.
 */
export function murmur2 (key: Uint8Array, length = key.length): number {
  let h = SEED ^ length
  const whole = length & ~3
  for (let i = 0; i < whole; i += 4) {
    let k = key[i]! | (key[i + 1]! << 8) | (key[i + 2]! << 16) | (key[i + 3]! << 24)
    k = Math.imul(k, M)
    k ^= k >>> 24
    k = Math.imul(k, M)
    h = Math.imul(h, M) ^ k
  }
  const rest = length & 3
  if (rest > 0) {
    if (rest === 3) h ^= key[whole + 2]! << 16
    if (rest >= 2) h ^= key[whole + 1]! << 8
    h = Math.imul(h ^ key[whole]!, M)
  }
  h ^= h >>> 13
  h = Math.imul(h, M)
  return h ^ (h >>> 15)
}

/**
 * murmur2 of a key's UTF-8 bytes. A plain ASCII key (the usual asset id)
 * is written into one reused buffer and hashed there, with no buffer or
 * view made for it.
 */
const scratch = Buffer.alloc(256)
function keyHash (key: string | Buffer): number {
  if (typeof key !== 'string') return murmur2(key)
  if (key.length > scratch.length) return murmur2(Buffer.from(key))
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i)
    if (c > 0x7f) return murmur2(Buffer.from(key))
    scratch[i] = c
  }
  return murmur2(scratch, key.length)
}

/** The partition Kafka's default partitioner puts `key` in, of `count`. */
export function partitionOfKey (key: string, count: number): number {
  return (keyHash(key) & 0x7fffffff) % count
}

/**
 * kafkajs's DefaultPartitioner (Java's, before sticky partitioning) with
 * murmur2 above: a message's own partition, else its key's hash modulo the
 * partition count, else round robin over partitions that have a leader.
 */
export const keyPartitioner: ICustomPartitioner = () => {
  const counters = new Map<string, number>()
  return ({ topic, partitionMetadata, message }) => {
    if (message.partition !== null && message.partition !== undefined) return message.partition
    if (message.key !== null && message.key !== undefined) return typeof message.key === 'string' ? partitionOfKey(message.key, partitionMetadata.length) : (keyHash(message.key) & 0x7fffffff) % partitionMetadata.length
    const count = (counters.get(topic) ?? randomInt(2 ** 31)) + 1
    counters.set(topic, count)
    const available = partitionMetadata.filter(p => p.leader >= 0)
    if (available.length > 0) return available[(count & 0x7fffffff) % available.length]!.partitionId
    return (count & 0x7fffffff) % partitionMetadata.length
  }
}
