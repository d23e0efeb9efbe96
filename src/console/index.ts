export { consoleRoutes } from './routes.js'
