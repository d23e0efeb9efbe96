import t from 'tap'
import { join } from 'node:path'
import { chart, output, promtool, readRepo, run } from './tools.js'

// promtool alone: these run where helm is not installed.
const PROMTOOL = promtool()

t.test('promtool accepts the alert rules and compose\'s Prometheus configuration', async t => {
  for (const [args, what] of [[['check', 'rules', join(chart, 'files/alerts.yaml')], 'rules'], [['check', 'config', '--syntax-only', join(chart, '../../prometheus.yml')], 'config']] as const) {
    try {
      await run(PROMTOOL, [...args])
      t.pass(what)
    } catch (err) {
      t.fail(`${what}: ${output(err)}`)
    }
  }
})

t.test('the alerts fire on what they watch, and not before their time (promtool test rules)', async t => {
  try {
    const { stdout } = await run(PROMTOOL, ['test', 'rules', 'alerts.test.yaml'], { cwd: join(chart, '../../../test/deploy') })
    t.match(stdout, /SUCCESS/)
  } catch (err) {
    t.fail(output(err))
  }
})

t.test('every alert is tested, and docs/operations.md explains each', async t => {
  const rules = [...readRepo('deploy/helm/evidence-gateway/files/alerts.yaml').matchAll(/^\s+- alert: (\S+)$/gm)].map(m => m[1]!)
  t.equal(rules.length, 10, 'the ten alerts')
  const tested = readRepo('test/deploy/alerts.test.yaml')
  const doc = readRepo('docs/operations.md')
  for (const name of rules) {
    t.match(tested, `alertname: ${name}\n`, `${name} has a promtool test`)
    t.match(doc, `\`${name}\``, `${name} in docs/operations.md`)
  }
})
