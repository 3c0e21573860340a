// The API explorer: the served OpenAPI document's operations, each with a form that sends it.
// Requests go out signed in by the browser's sign-in cookie (the inspector's): reads as they
// are, anything else with the session's anti-forgery header. Nothing is loaded from elsewhere.

import { h, replace, shown } from '/inspector/static/dom.js';
import { signedInCsrf, signInForm, signOutButton } from '/inspector/static/signin.js';

const OPENAPI = '/pmp-dsh-tavern/api/v1/openapi.json';
const main = document.querySelector('main');
const SHOWN_HEADERS = ['etag', 'location', 'retry-after', 'idempotent-replayed'];

/** A parameter's example as the form starts with it: its first example, else nothing. */
function exampleOf(parameter) {
  const examples = Object.values(parameter.examples ?? {});
  const value = examples.length ? examples[0].value : parameter.example ?? parameter.schema?.example;
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The JSON body a form starts with: the document's example for it, else an empty object. */
function bodyExample(operation) {
  const media = operation.requestBody?.content?.['application/json'];
  if (!media) return null;
  const examples = Object.values(media.examples ?? {});
  const value = examples.length ? examples[0].value : media.example ?? {};
  return shown(value);
}

function requestOf(path, method, parameters, inputs, body) {
  let url = path;
  const query = new URLSearchParams();
  const headers = {};
  parameters.forEach((parameter, index) => {
    const value = inputs[index].value;
    if (value === '') return;
    if (parameter.in === 'path') url = url.replace(`{${parameter.name}}`, encodeURIComponent(value));
    else if (parameter.in === 'query') query.set(parameter.name, value);
    else if (parameter.in === 'header') headers[parameter.name] = value;
  });
  const init = { method: method.toUpperCase(), headers, credentials: 'same-origin' };
  if (body !== null) {
    headers['Content-Type'] = 'application/json';
    init.body = body.value;
  }
  const search = query.toString();
  return { url: search ? `${url}?${search}` : url, init };
}

async function answerOf(response) {
  const text = await response.text();
  let body = text;
  try { body = shown(JSON.parse(text)); } catch { /* not JSON: shown as it came */ }
  const headers = SHOWN_HEADERS.filter((name) => response.headers.has(name))
    .map((name) => `${name}: ${response.headers.get(name)}`);
  return h('div', { class: 'answer', dataset: { status: String(response.status) } },
    h('p', {}, h('strong', { class: 'status' }, `${response.status} ${response.statusText}`)),
    headers.length ? h('pre', { class: 'headers' }, headers.join('\n')) : null,
    h('pre', { class: 'body' }, body));
}

function operationView(path, method, operation, csrf) {
  const parameters = operation.parameters ?? [];
  const inputs = parameters.map((parameter) => h('input', { name: parameter.name, value: exampleOf(parameter),
    'aria-label': parameter.name }));
  const example = bodyExample(operation);
  const body = example === null ? null : h('textarea', { name: 'body', 'aria-label': 'body' }, example);
  const result = h('div', { class: 'result' });
  const send = async (event) => {
    event.preventDefault();
    const { url, init } = requestOf(path, method, parameters, inputs, body);
    if (init.method !== 'GET' && init.method !== 'HEAD') init.headers['X-MVU-CSRF'] = csrf;
    replace(result, h('p', { class: 'note' }, 'Sending…'));
    try {
      replace(result, await answerOf(await fetch(url, init)));
    } catch (error) {
      replace(result, h('p', { class: 'alert' }, `no answer: ${error.message}`));
    }
  };
  return h('details', { class: 'operation', dataset: { operation: operation.operationId ?? `${method} ${path}` } },
    h('summary', {}, h('span', { class: `method ${method}` }, method.toUpperCase()), ' ', h('code', {}, path), ' ',
      operation.summary ?? ''),
    operation.description ? h('p', { class: 'note' }, operation.description) : null,
    h('form', { onsubmit: send },
      parameters.map((parameter, index) => h('label', {}, `${parameter.name} (${parameter.in}`,
        parameter.required ? ', required' : '', ')', parameter.description ? `: ${parameter.description}` : '',
        inputs[index])),
      body === null ? null : h('label', {}, 'JSON body', body),
      h('button', { type: 'submit' }, 'Send')),
    result);
}

function byTag(document) {
  const tags = new Map();
  for (const [path, operations] of Object.entries(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(operations)) {
      const tag = operation.tags?.[0] ?? 'other';
      if (!tags.has(tag)) tags.set(tag, []);
      tags.get(tag).push([path, method, operation]);
    }
  }
  return tags;
}

async function start() {
  const csrf = await signedInCsrf();
  if (csrf === null) {
    signInForm(main, '', start);
    return;
  }
  document.body.dataset.signedIn = 'true';
  document.querySelector('header').append(h('a', { class: 'away inspector', href: '/inspector/' }, 'inspector'),
    signOutButton(csrf, '/explorer/'));
  const response = await fetch(OPENAPI, { credentials: 'same-origin' });
  if (!response.ok) {
    replace(main, h('p', { class: 'alert' }, `the OpenAPI document did not load (${response.status})`));
    return;
  }
  const document_ = await response.json();
  main.classList.add('explorer');
  replace(main,
    h('p', {}, document_.info?.title ?? '', ' ', h('a', { href: OPENAPI }, 'OpenAPI document'),
      ': open an operation, change its example, send it. Requests are made as this signed-in browser.'),
    [...byTag(document_)].map(([tag, operations]) => h('section', { class: 'tag', dataset: { tag } },
      h('h2', {}, tag), operations.map(([path, method, operation]) => operationView(path, method, operation, csrf)))));
}

start();
