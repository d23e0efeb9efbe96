import t from 'tap'
import { ActorPool } from '../../src/runs/actors.js'

t.test('an ended run\'s actor is handed to the next run, queued', async t => {
  const pool = new ActorPool()
  const first = pool.take()
  t.equal(first.getSnapshot().context, 'queued')
  first.send({ type: 'START' })
  first.send({ type: 'SUCCEED' })
  pool.give(first)
  t.equal(pool.size, 1)
  const next = pool.take()
  t.equal(next, first, 'the same actor')
  t.equal(next.getSnapshot().context, 'queued')
  t.equal(next.getSnapshot().status, 'active', 'still running its logic')
  next.send({ type: 'START' })
  t.equal(next.getSnapshot().context, 'running')
  t.equal(pool.size, 0)
})

t.test('an actor still in flight is stopped, never reused', async t => {
  const pool = new ActorPool()
  for (const events of [[], ['START']] as const) {
    const actor = pool.take()
    for (const type of events) actor.send({ type })
    pool.give(actor)
    t.equal(pool.size, 0)
    const status = actor.getSnapshot().context
    actor.send({ type: 'CANCEL' })
    t.equal(actor.getSnapshot().context, status, 'stopped: it takes no event')
    t.not(pool.take(), actor)
  }
})

t.test('past its bound the pool stops what it is given', async t => {
  const pool = new ActorPool(2)
  const actors = [pool.take(), pool.take(), pool.take()]
  for (const actor of actors) {
    actor.send({ type: 'CANCEL' })
    pool.give(actor)
  }
  t.equal(pool.size, 2)
  for (const actor of actors) actor.send({ type: 'START' })
  t.same(actors.map(a => a.getSnapshot().context), ['running', 'running', 'cancelled'], 'the first two kept (and reset), the third stopped')
})
