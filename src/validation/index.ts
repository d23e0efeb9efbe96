export { compileSchema, errorMap, errorKey } from './schema.js'
export { isIsoDateTimeWithZone } from './formats.js'
export { snakeToCamel } from './case.js'
export { STORAGE_ID, STORAGE_ID_PATTERN, STORAGE_ID_MAX, STORAGE_ID_RULE, isStorageId, LABEL_MAX, isLabel, labelProblem, REQUEST_ID } from './identifiers.js'
