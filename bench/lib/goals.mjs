// The scenarios' targets, in one place: the scenarios print their verdicts
// from them and `npm run bench report` (bench/questions.mjs) checks the saved
// runs against them. They are the bench's goals, not the tests'.
const MiB = 1024 * 1024

export const TELEMETRY_TARGETS = { kafkaReqPerSec: 25000, vsBare: 0.5, vsFastify: 1.5, vsGoPeerPerCore: 1, pacedP99Ms: 20, batchRecordsPerSec: 100000, batchPacedP99Ms: 50 }

export const RUNS_TARGETS = { runsPerSec: 5000, deliveryP99Ms: 10, subscribers: 10000, rssBytes: 1024 * MiB }

/** Issue 15's ratios to the baselines measured in the same run. */
export const RUNS_RATIOS = { vsLmdbRun: 0.9, sseVsMemory: 1.5 }

export const EVIDENCE_TARGETS = { ratio: 0.8, rssBytes: 150e6, lagP99Ms: 20 }
