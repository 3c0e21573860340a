// The page's calls to the API, signed in by its cookie: reads with the session's scope, the edit
// with the anti-forgery header. A refusal becomes an ApiError carrying the problem's code.

export const API = '/pmp-dsh-tavern/api/v1/mvu';

export class ApiError extends Error {
  constructor(status, code, detail, body = null) {
    super(`${code}: ${detail}`);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.detail = detail;
    this.body = body;
  }
}

export function sessionScope(sessionId) {
  return { authority: 'local', sessionId };
}

async function refusal(response) {
  let body = null;
  try { body = await response.json(); } catch { /* not JSON: the status says enough */ }
  return new ApiError(response.status, body?.code ?? `HTTP_${response.status}`, body?.detail ?? response.statusText,
    body);
}

export function createApi({ csrf, fetcher = fetch }) {
  async function get(path, params = {}, { signal, etag } = {}) {
    const query = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, typeof v === 'string' ? v
      : JSON.stringify(v)]));
    const headers = etag ? { 'If-None-Match': etag } : {};
    const response = await fetcher(`${API}${path}?${query}`, { headers, signal, credentials: 'same-origin' });
    if (response.status === 304) return { notModified: true, etag };
    if (!response.ok) throw await refusal(response);
    return { value: await response.json(), etag: response.headers.get('ETag') };
  }

  async function post(path, body, { signal } = {}) {
    const response = await fetcher(`${API}${path}`, {
      method: 'POST', signal, credentials: 'same-origin', body: JSON.stringify(body),
      headers: { 'Content-Type': 'application/json', 'X-MVU-CSRF': csrf ?? '' },
    });
    if (!response.ok) throw await refusal(response);
    return response.json();
  }

  return {
    sessions: (opts) => get('/inspector/sessions', {}, opts).then((r) => r.value),
    turns: (sessionId, opts) => get(`/inspector/sessions/${encodeURIComponent(sessionId)}/turns`, {}, opts)
      .then((r) => r.value),
    resources: (sessionId, opts) => get('/resources', { scope: sessionScope(sessionId) }, opts).then((r) => r.value),
    resource: (id, sessionId, opts) => get('/resource', { id, scope: sessionScope(sessionId) }, opts),
    history: (id, sessionId, opts) => get('/history', { id, scope: sessionScope(sessionId), includeBefore: 'true' },
      opts).then((r) => r.value),
    /** The reply that ended `turn`, read (its text and commands), or null when it has none. */
    reply: (sessionId, turn, opts) => get(`/inspector/sessions/${encodeURIComponent(sessionId)}/turns/${turn}/reply`,
      {}, opts).then((r) => r.value, (error) => { if (error.status === 404) return null; throw error; }),
    facts: (id, sessionId, opts) => get('/facts', { id, scope: sessionScope(sessionId) }, opts).then((r) => r.value),
    /** `GET /mvu/diff`: `{id, scope, from, to, toId?}`. */
    diff: (params, opts) => get('/diff', params, opts).then((r) => r.value),
    update: (body, opts) => post('/update', body, opts),
  };
}
