import t from 'tap'
import fc from 'fast-check'
import { assignPartitions, type Member } from '../../../src/runs/cluster/assignment.js'

const members = fc.uniqueArray(fc.record({ memberId: fc.string({ minLength: 1, maxLength: 6 }), owned: fc.array(fc.integer({ min: -2, max: 40 }), { maxLength: 12 }) }), { minLength: 1, maxLength: 9, selector: m => m.memberId })

t.test('every partition goes to exactly one member, and shares differ by one at most', async t => {
  t.doesNotThrow(() => fc.assert(fc.property(members, fc.integer({ min: 0, max: 36 }), (ms, count) => {
    const plan = assignPartitions(ms, count)
    const all = [...plan.values()].flat().sort((a, b) => a - b)
    if (JSON.stringify(all) !== JSON.stringify(Array.from({ length: count }, (_, p) => p))) return false
    const sizes = [...plan.values()].map(ps => ps.length)
    return Math.max(...sizes) - Math.min(...sizes) <= 1 && plan.size === ms.length
  })))
})

t.test('a member keeps what it owned as far as its share allows', async t => {
  t.doesNotThrow(() => fc.assert(fc.property(members, fc.integer({ min: 1, max: 36 }), (ms, count) => {
    const plan = assignPartitions(ms, count)
    const floor = Math.floor(count / ms.length)
    const claimed = new Map<number, number>()
    for (const m of ms) for (const p of new Set(m.owned)) if (p >= 0 && p < count) claimed.set(p, (claimed.get(p) ?? 0) + 1)
    // A member whose owned partitions nobody else claims keeps at least its floor of them.
    return ms.every(m => {
      const sole = [...new Set(m.owned)].filter(p => p >= 0 && p < count && claimed.get(p) === 1)
      const kept = plan.get(m.memberId)!.filter(p => sole.includes(p)).length
      return kept >= Math.min(sole.length, floor)
    })
  })))
})

t.test('one member joining three moves only what it takes', async t => {
  const before: Member[] = [{ memberId: 'a', owned: [0, 1, 2, 3] }, { memberId: 'b', owned: [4, 5, 6, 7] }, { memberId: 'c', owned: [8, 9, 10, 11] }]
  const plan = assignPartitions([...before, { memberId: 'd', owned: [] }], 12)
  t.equal(plan.get('d')!.length, 3)
  for (const m of before) t.ok(plan.get(m.memberId)!.every(p => m.owned.includes(p)), `${m.memberId} keeps only its own`)
  t.same(assignPartitions([...before, { memberId: 'd', owned: [] }], 12), plan, 'the same input, the same plan')
})

t.test('no members, or more members than partitions', async t => {
  t.same(assignPartitions([], 4), new Map())
  const plan = assignPartitions([{ memberId: 'a', owned: [] }, { memberId: 'b', owned: [0] }, { memberId: 'c', owned: [] }], 2)
  t.same(plan.get('b'), [0], 'the owner keeps its partition')
  t.equal([...plan.values()].flat().length, 2)
})
