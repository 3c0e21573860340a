// Signing a page of this server in (the inspector, the API explorer): the session its cookie
// holds, and the form that takes the server's token when the one-time link was not used.

import { h, replace } from './dom.js';

async function json(path, init = {}) {
  const response = await fetch(path, { credentials: 'same-origin', ...init });
  return { ok: response.ok, status: response.status, body: await response.json().catch(() => null) };
}

/** The anti-forgery token of this browser's signed-in session, or null when it is not signed in. */
export async function signedInCsrf() {
  const session = await json('/inspector/session');
  return session.ok && session.body?.signedIn ? session.body.csrf : null;
}

/** Put the token form into `main`; `onSignedIn` runs once the server took the token. */
export function signInForm(main, message, onSignedIn) {
  const input = h('input', { type: 'password', name: 'token', autocomplete: 'off', 'aria-label': 'Token' });
  const status = h('p', { class: 'alert', role: 'alert' }, message ?? '');
  const form = h('form', { class: 'signin', onsubmit: async (event) => {
    event.preventDefault();
    const answer = await json('/inspector/signin', { method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ token: input.value }) });
    if (answer.ok) onSignedIn();
    else status.textContent = answer.body?.detail ?? `sign-in refused (${answer.status})`;
  } },
  h('h2', {}, 'Sign in'),
  h('p', {}, 'Open the one-time link mvu serve printed, or enter the server\'s token (mvu serve printed it at ',
    'its first start and keeps it in <ledger>.token, var/mvu.sqlite3.token after make run).'),
  input, h('button', { type: 'submit' }, 'Sign in'), status);
  replace(main, form);
}

/** The header's sign-out button: ends the session on the server, then reloads `page`. */
export function signOutButton(csrf, page) {
  return h('button', { type: 'button', class: 'signout', onclick: async () => {
    await fetch('/inspector/session', { method: 'DELETE', credentials: 'same-origin', headers: { 'X-MVU-CSRF': csrf } });
    location.replace(page);
  } }, 'Sign out');
}
