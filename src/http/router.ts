/**
 * Path router. uWS's own router reads `:` as a parameter marker, which the
 * spec's `/runs:start` makes ambiguous, so routes are matched here instead:
 * `{name}` is a parameter segment, a trailing `*` captures the rest, and a
 * colon is just a character.
 */
export interface Match<T> {
  readonly value: T
  readonly params: Record<string, string>
}

type Segment = { literal: string } | { param: string }

interface Pattern<T> {
  readonly segments: readonly Segment[]
  readonly wildcard: boolean
  readonly value: T
}

/** The path exists with other methods: those, for the 405's `Allow` header. */
export interface NotAllowed {
  readonly allowed: readonly string[]
}

export type Lookup<T> = Match<T> | NotAllowed | undefined

export class Router<T> {
  private readonly exact = new Map<string, T>()
  /** Methods of each literal path. */
  private readonly exactPaths = new Map<string, string[]>()
  private readonly patterns = new Map<string, Pattern<T>[]>()

  add (method: string, path: string, value: T): void {
    if (!path.startsWith('/')) throw new Error(`route path must start with '/': ${path}`)
    const parts = path.split('/').slice(1)
    const wildcard = parts.at(-1) === '*'
    if (wildcard) parts.pop()
    const segments = parts.map(parseSegment)
    if (!wildcard && segments.every(s => 'literal' in s)) {
      const key = `${method} ${path}`
      if (this.exact.has(key)) throw new Error(`duplicate route ${key}`)
      this.exact.set(key, value)
      this.exactPaths.set(path, [...(this.exactPaths.get(path) ?? []), method])
      return
    }
    const list = this.patterns.get(method) ?? []
    list.push({ segments, wildcard, value })
    this.patterns.set(method, list)
  }

  find (method: string, path: string): Lookup<T> {
    const found = this.match(method, path)
    if (found) return found
    const allowed = new Set(this.exactPaths.get(path))
    for (const [other, list] of this.patterns) if (this.matchPatterns(list, path)) allowed.add(other)
    return allowed.size === 0 ? undefined : { allowed: [...allowed].sort() }
  }

  private match (method: string, path: string): Match<T> | undefined {
    const hit = this.exact.get(`${method} ${path}`)
    if (hit !== undefined) return { value: hit, params: {} }
    return this.matchPatterns(this.patterns.get(method), path)
  }

  private matchPatterns (list: Pattern<T>[] | undefined, path: string): Match<T> | undefined {
    if (!list) return undefined
    const parts = path.split('/').slice(1)
    for (const p of list) {
      const params = matchSegments(p, parts)
      if (params) return { value: p.value, params }
    }
    return undefined
  }
}

function parseSegment (s: string): Segment {
  const m = /^\{([a-zA-Z_][a-zA-Z0-9_]*)\}$/.exec(s)
  return m ? { param: m[1]! } : { literal: s }
}

function matchSegments<T> (p: Pattern<T>, parts: string[]): Record<string, string> | undefined {
  if (p.wildcard ? parts.length < p.segments.length : parts.length !== p.segments.length) return undefined
  const params: Record<string, string> = {}
  for (let i = 0; i < p.segments.length; i++) {
    const seg = p.segments[i]!
    const part = parts[i]!
    if ('literal' in seg) {
      if (seg.literal !== part) return undefined
    } else {
      if (part === '') return undefined
      try {
        params[seg.param] = decodeURIComponent(part)
      } catch {
        return undefined
      }
    }
  }
  if (p.wildcard) params['*'] = parts.slice(p.segments.length).join('/')
  return params
}
