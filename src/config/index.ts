export { loadConfig, ConfigError, StartupError, startupStep, camelName, isCluster, isLoopbackHost, workerCount, type Config } from './load.js'
export { variables, ownedPrefixes, type Variable } from './variables.js'
export { readJsonFile } from './json-file.js'
export { VERSION } from './version.js'
