// Memory and CPU of a process during a measurement, from /proc (Linux).
import { readFileSync, writeFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'

let clockTicks
function ticksPerSecond () {
  if (clockTicks === undefined) {
    try { clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100 } catch { clockTicks = 100 }
  }
  return clockTicks
}

/** { rss, hwm } in bytes from /proc/<pid>/status, or undefined once gone. */
export function memory (pid) {
  let text
  try { text = readFileSync(`/proc/${pid}/status`, 'utf8') } catch { return undefined }
  const kb = name => {
    const m = text.match(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm'))
    return m ? Number(m[1]) * 1024 : undefined
  }
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') }
}

/** CPU seconds (user + system, all threads) from /proc/<pid>/stat, or undefined once gone. */
export function cpuSeconds (pid) {
  let text
  try { text = readFileSync(`/proc/${pid}/stat`, 'utf8') } catch { return undefined }
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
  // After "pid (comm) ": state is field 3, utime 14, stime 15 → indexes 11 and 12 here.
  return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond()
}

/** Resets VmHWM to the current RSS (Linux >= 4.0, own processes or root). */
export function resetPeak (pid) {
  try { writeFileSync(`/proc/${pid}/clear_refs`, '5'); return true } catch { return false }
}

/**
 * Samples a server's RSS every `intervalMs` from now until stop(). The peak is
 * the larger of the highest sample and VmHWM, whose counter is reset at start
 * when the kernel allows it (so the figure covers the measurement, not the
 * start-up); `peakSource` says which applied. Also CPU use of the server and
 * of any `others` pids (e.g. the load generator) over the same window.
 */
export function sampleProcess (pid, { intervalMs = 100 } = {}) {
  const hwmReset = resetPeak(pid)
  const t0 = process.hrtime.bigint()
  const cpu0 = cpuSeconds(pid)
  let maxRss = memory(pid)?.rss ?? 0
  let samples = 1
  const others = new Map() // pid → { first, last }
  const sampleOthers = () => {
    for (const [p, v] of others) {
      const c = cpuSeconds(p)
      if (c !== undefined) { v.first ??= c; v.last = c }
    }
  }
  const timer = setInterval(() => {
    const m = memory(pid)
    if (m?.rss !== undefined) { maxRss = Math.max(maxRss, m.rss); samples++ }
    sampleOthers()
  }, intervalMs)
  return {
    /** Also track the CPU time of another process (sampled, so it may miss up to one interval). */
    watch (otherPid) { others.set(otherPid, { first: undefined, last: undefined }); sampleOthers() },
    stop () {
      clearInterval(timer)
      const wall = Number(process.hrtime.bigint() - t0) / 1e9
      const m = memory(pid)
      if (m?.rss !== undefined) maxRss = Math.max(maxRss, m.rss)
      const cpu1 = cpuSeconds(pid)
      const hwm = m?.hwm
      const peakRss = hwmReset && hwm !== undefined ? Math.max(hwm, maxRss) : maxRss
      const otherCpu = {}
      for (const [p, v] of others) otherCpu[p] = v.first === undefined ? undefined : (v.last - v.first) / wall
      return {
        peakRssBytes: peakRss,
        peakRssSource: hwmReset ? 'VmHWM (reset at start) and VmRSS polls' : `VmRSS polled every ${intervalMs} ms`,
        lifetimeHwmBytes: hwmReset ? undefined : hwm,
        endRssBytes: m?.rss,
        rssSamples: samples,
        wallSeconds: wall,
        cpuSeconds: cpu0 !== undefined && cpu1 !== undefined ? cpu1 - cpu0 : undefined,
        cpuFraction: cpu0 !== undefined && cpu1 !== undefined ? (cpu1 - cpu0) / wall : undefined,
        otherCpuFraction: otherCpu
      }
    }
  }
}

/** Per-CPU and total jiffies from /proc/stat: { all: {busy, idle, steal}, cpus: [{busy, idle, steal}] }. */
export function procStat () {
  let text
  try { text = readFileSync('/proc/stat', 'utf8') } catch { return undefined }
  const out = { all: undefined, cpus: [] }
  for (const line of text.split('\n')) {
    const m = /^cpu(\d*)\s+(.*)$/.exec(line)
    if (!m) continue
    // user nice system idle iowait irq softirq steal guest guest_nice (guest is inside user)
    const [user, nice, system, idle, iowait, irq, softirq, steal = 0] = m[2].trim().split(/\s+/).map(Number)
    const v = { busy: user + nice + system + irq + softirq + steal, idle: idle + iowait, steal }
    if (m[1] === '') out.all = v
    else out.cpus[Number(m[1])] = v
  }
  return out
}

/**
 * Whole-machine CPU use between start and stop(): cores busy in total, each
 * CPU's busy fraction, steal (a VM's host taking the CPU). With the server's,
 * wrk's and the runner's own use subtracted, what remains is other processes
 * competing with the measurement.
 */
export function sampleSystem () {
  const t0 = process.hrtime.bigint()
  const s0 = procStat()
  const self0 = process.cpuUsage()
  return {
    stop () {
      const wall = Number(process.hrtime.bigint() - t0) / 1e9
      const s1 = procStat()
      const self = process.cpuUsage(self0)
      if (!s0 || !s1) return undefined
      const hz = ticksPerSecond()
      const cores = (a, b) => (b.busy - a.busy) / hz / wall
      return {
        wallSeconds: wall,
        busyCores: cores(s0.all, s1.all),
        stealCores: (s1.all.steal - s0.all.steal) / hz / wall,
        perCpuBusy: s1.cpus.map((c, i) => (s0.cpus[i] ? Math.min(1, cores(s0.cpus[i], c)) : undefined)),
        runnerCores: (self.user + self.system) / 1e6 / wall
      }
    }
  }
}

/**
 * CPU (in cores) that none of `ours` (cores used by the measured processes)
 * nor the runner used during a sampleSystem() window: other processes
 * competing with the measurement.
 */
export function othersCpu (system, ...ours) {
  return system ? Math.max(0, system.busyCores - system.runnerCores - ours.reduce((a, b) => a + (b ?? 0), 0)) : undefined
}

/**
 * Samples `pid` (peak RSS, CPU), its `companions` ([{ label, pid }]: a
 * broker, an object store) and the whole machine while `fn(watch)` runs;
 * `watch(pid)` adds a process started meanwhile (the load generator).
 * Resolves to { value, proc, system }: fn's result, sampleProcess's and
 * sampleSystem's figures. The samplers stop even when fn throws.
 */
export async function sampleWhile (pid, companions, fn) {
  const sampler = sampleProcess(pid)
  for (const c of companions) if (c.pid) sampler.watch(c.pid)
  const sys = sampleSystem()
  let proc
  let system
  let value
  try {
    value = await fn(other => sampler.watch(other))
  } finally {
    proc = sampler.stop()
    system = sys.stop()
  }
  return { value, proc, system }
}
