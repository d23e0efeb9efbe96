import t from 'tap'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const src = join(root, 'src')

/**
 * The layers of src/, lowest first. A file may import from its own folder
 * and from folders of a lower layer, never sideways or up: capabilities do
 * not import each other, and only main.ts wires them together.
 */
const LAYERS: ReadonlyArray<readonly string[]> = [
  ['errors.ts', 'validation', 'harness-api'],
  ['config'],
  ['state', 'storage'],
  ['cluster'],
  ['bus'],
  ['http'],
  ['ops', 'auth'],
  ['telemetry', 'evidence', 'runs', 'frontdoor', 'console'],
  ['main.ts'],
  ['cli']
]
const rank = new Map(LAYERS.flatMap((names, i) => names.map(n => [n, i] as const)))

function files (dir: string): string[] {
  return readdirSync(dir).flatMap(name => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : []
  })
}

/** The first path segment under src/: a folder, or a file at the top. */
const unit = (file: string): string => relative(src, file).split('/')[0]!

function imports (file: string): string[] {
  const text = readFileSync(file, 'utf8')
  const found = [...text.matchAll(/^(?:import|export)\b[^'"]*?from\s+'(\.[^']+)'/gm), ...text.matchAll(/import\('(\.[^']+)'\)/g)]
  return found.map(m => resolve(dirname(file), m[1]!.replace(/\.js$/, '.ts')))
}

const graph = new Map(files(src).map(f => [f, imports(f)]))

t.test('every unit of src/ has a layer', async t => {
  for (const u of new Set([...graph.keys()].map(unit))) t.ok(rank.has(u), `${u} is placed in LAYERS`)
})

t.test('imports go to the same folder or a lower layer', async t => {
  const wrong: string[] = []
  for (const [file, deps] of graph) {
    for (const dep of deps) {
      const from = unit(file)
      const to = unit(dep)
      if (from !== to && !(rank.get(to)! < rank.get(from)!)) wrong.push(`${relative(src, file)} → ${relative(src, dep)}`)
    }
  }
  t.same(wrong, [])
})

t.test('a folder is entered only through its index.ts', async t => {
  const wrong: string[] = []
  for (const [file, deps] of graph) {
    for (const dep of deps) {
      if (unit(file) !== unit(dep) && relative(src, dep).includes('/') && !dep.endsWith('/index.ts')) wrong.push(`${relative(src, file)} → ${relative(src, dep)}`)
    }
  }
  t.same(wrong, [])
})

t.test('the import graph of src/ has no circle', async t => {
  const state = new Map<string, 'open' | 'done'>()
  const circles: string[] = []
  const visit = (file: string, path: string[]): void => {
    if (state.get(file) === 'done') return
    if (state.get(file) === 'open') {
      circles.push([...path.slice(path.indexOf(file)), file].map(f => relative(src, f)).join(' → '))
      return
    }
    state.set(file, 'open')
    for (const dep of graph.get(file) ?? []) visit(dep, [...path, file])
    state.set(file, 'done')
  }
  for (const file of graph.keys()) visit(file, [])
  t.same(circles, [])
})

t.test('no file of src/ or bench/ passes 400 lines', async t => {
  // bench/'s own scripts; its baselines' installed dependencies and its results are not ours.
  const scripts = (dir: string): string[] => readdirSync(dir).flatMap(name => {
    const path = join(dir, name)
    if (name === 'node_modules' || name === 'results') return []
    return statSync(path).isDirectory() ? scripts(path) : path.endsWith('.mjs') ? [path] : []
  })
  const long = [...graph.keys(), ...scripts(join(root, 'bench'))]
    .map(f => [relative(root, f), readFileSync(f, 'utf8').split('\n').length] as const)
    .filter(([, n]) => n > 400)
  t.same(long, [])
})
