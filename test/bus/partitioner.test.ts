import { createRequire } from 'node:module'
import t from 'tap'
import { Partitioners, type PartitionMetadata } from 'kafkajs'
import { keyPartitioner, murmur2 } from '../../src/bus/partitioner.js'

// kafkajs's DefaultPartitioner is Java's; ours must put every key where it
// does, or a consumer keyed by asset would see one asset on two partitions.
const kafkajsMurmur2 = createRequire(import.meta.url)('kafkajs/src/producer/partitioners/default/murmur2.js') as (key: Buffer) => number

let seed = Number(process.env['FUZZ_SEED'] ?? 11)
const random = (n: number): number => { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return seed % n }
const randomKey = (): string => {
  const chars = ['a', 'Z', '0', '-', '.', '/', ' ', '\u00e9', '\u4e2d', '\ud83d\ude9a', '\x7f', '\x00']
  let key = ''
  for (let n = random(40); n > 0; n--) key += random(3) === 0 ? chars[random(chars.length)] : String.fromCharCode(0x20 + random(95))
  return key
}
const partitions = (count: number, leaderless: number[] = []): PartitionMetadata[] =>
  Array.from({ length: count }, (_, partitionId) => ({ partitionErrorCode: 0, partitionId, leader: leaderless.includes(partitionId) ? -1 : 0, replicas: [0], isr: [0] }))

t.test('murmur2 is kafkajs\'s (Java\'s) hash, for every length and byte', async t => {
  let mismatches = 0
  for (let n = 0; n < 20000; n++) {
    const bytes = Buffer.from(Array.from({ length: random(70) }, () => random(256)))
    if (murmur2(bytes) !== kafkajsMurmur2(bytes)) mismatches++
  }
  t.equal(mismatches, 0)
  t.equal(murmur2(Buffer.from('truck-0042')), kafkajsMurmur2(Buffer.from('truck-0042')))
})

t.test('a keyed message goes to the partition kafkajs\'s DefaultPartitioner picks, ASCII or not', async t => {
  const ours = keyPartitioner()
  const theirs = Partitioners.DefaultPartitioner()
  let mismatches = 0
  for (let n = 0; n < 20000; n++) {
    const key = n % 2 === 0 ? randomKey() : Buffer.from(randomKey())
    const args = { topic: 't', partitionMetadata: partitions(1 + random(24)), message: { key, value: 'v' } }
    if (ours(args) !== theirs(args)) mismatches++
  }
  t.equal(mismatches, 0)
  const long = 'k'.repeat(300)
  t.equal(ours({ topic: 't', partitionMetadata: partitions(7), message: { key: long, value: 'v' } }), theirs({ topic: 't', partitionMetadata: partitions(7), message: { key: long, value: 'v' } }), 'a key longer than the scratch buffer')
})

t.test('a message\'s own partition wins; without a key, round robin over partitions with a leader', async t => {
  const ours = keyPartitioner()
  t.equal(ours({ topic: 't', partitionMetadata: partitions(4), message: { key: 'x', partition: 3, value: 'v' } }), 3)
  const picked = new Set<number>()
  for (let n = 0; n < 40; n++) picked.add(ours({ topic: 't', partitionMetadata: partitions(4, [1]), message: { value: 'v' } }))
  t.same([...picked].sort(), [0, 2, 3])
})
