import { askForToken } from './auth.js'
import { setConnection } from './dom.js'
import { ingestPanel } from './ingest.js'
import { listPage } from './list.js'
import { here } from './place.js'
import { runPage } from './run.js'

/** The console's entry: the run list at `/console`, a run at `/console/runs/{id}`. */
function boot (): void {
  const home = document.getElementById('home') as HTMLAnchorElement
  home.href = `${here.root}/console`
  document.getElementById('auth')!.addEventListener('click', () => askForToken('Paste a bearer token for the harness.'))
  ingestPanel(document.getElementById('ingest')!)
  setConnection('connecting')
  const main = document.getElementById('main')!
  if (here.runId === undefined) listPage(main)
  else runPage(main, here.runId)
}

boot()
