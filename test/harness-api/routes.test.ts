import t from 'tap'
import pino from 'pino'
import { LocalBus } from '../../src/bus/index.js'
import { loadConfig } from '../../src/config/index.js'
import { openState } from '../../src/state/index.js'
import { HarnessService } from '../../src/runs/index.js'
import { FRONTED_ROUTES } from '../../src/frontdoor/routes.js'
import { HARNESS_ROUTES, routeKey } from '../../src/harness-api/index.js'

const keys = (routes: ReadonlyArray<{ method: string, path: string }>): string[] => routes.map(routeKey).sort()

// The harness and the front door read one list: a route the harness serves
// that the front door does not know would be a 404 through it, and a route
// the front door forwards that the harness does not serve, a forwarded 404.
t.test('the harness serves exactly the shared routes, on its port and on the peer listener', async t => {
  const dir = t.testdir()
  const state = openState(dir)
  const service = new HarnessService(loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent' }), state, new LocalBus(state), pino({ level: 'silent' }), { id: 'self', isAlive: () => true, knows: id => id === 'self' })
  t.teardown(() => state.close())
  t.same(keys(service.routes()), keys(HARNESS_ROUTES))
  t.same(keys(service.routes(true)), keys(HARNESS_ROUTES))
})

t.test('the front door fronts every shared route with its query and links rules', async t => {
  for (const route of HARNESS_ROUTES) {
    const fronted = FRONTED_ROUTES.find(r => routeKey(r) === routeKey(route))
    t.same(fronted, route, routeKey(route))
  }
  t.same(keys(FRONTED_ROUTES.filter(r => !HARNESS_ROUTES.some(h => routeKey(h) === routeKey(r)))).map(k => k.split(' ')[1]!.split('/')[1]),
    ['console', 'console', 'console', 'health', 'health'], 'besides them only the console and health routes of the harness port')
})
