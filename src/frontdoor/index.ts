export { FrontDoor } from './service.js'
export { loadOrgs, type Org } from './orgs.js'
export { frontDoorOpenApi } from './openapi.js'
