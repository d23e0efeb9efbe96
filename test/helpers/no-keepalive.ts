import { Agent, setGlobalDispatcher } from 'undici'

// uWS keeps idle connections for 10 s and has no way to close them from
// JavaScript, so a test file would linger that long after its last test.
// Test clients do not keep connections alive; the servers are unaffected.
setGlobalDispatcher(new Agent({ pipelining: 0, keepAliveTimeout: 1, keepAliveMaxTimeout: 1 }))
