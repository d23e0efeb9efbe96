import t from 'tap'
import { ReplayBudget } from '../../src/runs/replay-budget.js'

t.test('reservations past the budget wait, first come first served, and go as bytes are given back', async t => {
  const budget = new ReplayBudget(10)
  await budget.take(6)
  const order: string[] = []
  const b = budget.take(6).then(() => order.push('b'))
  const c = budget.take(1).then(() => order.push('c'))
  await new Promise(resolve => setImmediate(resolve))
  t.same(order, [], 'b waits, and c behind it though it would fit: no one is overtaken for ever')
  t.equal(budget.inUse, 6)
  budget.give(6)
  await Promise.all([b, c])
  t.same(order, ['b', 'c'])
  t.equal(budget.inUse, 7)
})

t.test('one reservation larger than the budget goes alone, so a replay always moves', async t => {
  const budget = new ReplayBudget(10)
  await budget.take(50)
  let next = false
  const waiting = budget.take(1).then(() => { next = true })
  await new Promise(resolve => setImmediate(resolve))
  t.equal(next, false)
  budget.give(50)
  await waiting
  t.equal(budget.inUse, 1)
})
