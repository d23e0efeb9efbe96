import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import t from 'tap'
import { Incarnation, openState, STALE_MS } from '../../src/state/index.js'

const dist = (path: string): string => new URL(`../../dist/${path}`, import.meta.url).href

const HOLDER = `
const [stateUrl, dir] = process.argv.slice(1)
const { openState, Incarnation } = await import(stateUrl)
const me = await Incarnation.start(openState(dir))
console.log(me.id)
setInterval(() => {}, 1000)
`

t.test('another process on this kernel is alive until it is killed -9, and not a moment longer', async t => {
  const dir = t.testdir()
  const state = openState(dir)
  t.teardown(() => state.close())
  const me = await Incarnation.start(state)
  const child = spawn(process.execPath, ['--input-type=module', '-e', HOLDER, dist('state/index.js'), dir], { stdio: ['ignore', 'pipe', 'inherit'] })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  const id = await new Promise<string>(resolve => createInterface({ input: child.stdout! }).once('line', resolve))
  t.ok(me.isAlive(id), 'alive while it runs')
  t.ok(me.isAlive(me.id), 'and so am I')
  child.kill('SIGKILL')
  await new Promise(resolve => child.once('exit', resolve))
  t.notOk(me.isAlive(id), 'dead once killed, although its heartbeat is fresh')
  t.notOk(me.isAlive('4242-deadbeef'), 'an incarnation never registered is not alive')
})

t.test('a process elsewhere (another pid namespace) is alive while its heartbeat is fresh', async t => {
  const dir = t.testdir()
  const state = openState(dir)
  t.teardown(() => state.close())
  let now = 1_000_000
  const me = await Incarnation.start(state, () => now)
  const registry = state.openDB<object, string>({ name: 'incarnations' })
  await registry.put('7-elsewhere', { pid: 7, host: 'another-boot/pid:[1]', proc_start: '1', started_at: now, heartbeat_at: now })
  t.ok(me.isAlive('7-elsewhere'))
  now += STALE_MS - 1
  t.ok(me.isAlive('7-elsewhere'), 'just before its heartbeat goes stale')
  now += 1
  t.notOk(me.isAlive('7-elsewhere'), 'gone once it is stale')
})

t.test('a process that starts forgets the registrations of processes that are gone, and stop unregisters', async t => {
  const dir = t.testdir()
  const state = openState(dir)
  t.teardown(() => state.close())
  const registry = state.openDB<object, string>({ name: 'incarnations' })
  await registry.put('1-gone', { pid: 2 ** 22 + 1, host: undefined, proc_start: undefined, started_at: 0, heartbeat_at: 0 })
  const me = await Incarnation.start(state)
  t.same([...registry.getKeys()], [me.id])
  await me.stop()
  t.same([...registry.getKeys()], [])
})
