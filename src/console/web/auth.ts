import { here } from './place.js'

const TOKEN = 'console.token'
const TENANT = 'console.tenant'

/** The operator's bearer token and (on the harness port) tenant, kept in this tab's session storage only. */
export function credentials (): { token: string | null, tenant: string | null } {
  return { token: sessionStorage.getItem(TOKEN), tenant: here.frontDoor ? null : sessionStorage.getItem(TENANT) }
}

let open = false

/**
 * Asks for a token (and on the harness port a tenant): a 401 from the API,
 * or the operator's own click. Saved, the page starts again with it.
 */
export function askForToken (why: string): void {
  const dialog = document.getElementById('login') as HTMLDialogElement
  if (open) return
  open = true
  document.getElementById('login-why')!.textContent = why
  const token = document.getElementById('login-token') as HTMLTextAreaElement
  const tenant = document.getElementById('login-tenant') as HTMLInputElement
  document.getElementById('login-tenant-label')!.hidden = here.frontDoor
  token.value = sessionStorage.getItem(TOKEN) ?? ''
  tenant.value = sessionStorage.getItem(TENANT) ?? ''
  dialog.showModal()
  const form = document.getElementById('login-form') as HTMLFormElement
  form.onsubmit = event => {
    event.preventDefault()
    const value = token.value.trim().replace(/^Bearer\s+/i, '')
    if (value === '') return
    sessionStorage.setItem(TOKEN, value)
    if (tenant.value.trim() === '') sessionStorage.removeItem(TENANT)
    else sessionStorage.setItem(TENANT, tenant.value.trim())
    location.reload()
  }
}
