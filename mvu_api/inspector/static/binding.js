// The bubble client: a card's message view follows the read-only state snapshot of its scope.
//
//   const binding = await createMvuCardBinding({ client, scope, signal, pollMs });
//   binding.getSnapshot(); const stop = binding.subscribe((snapshot) => ...); binding.dispose();
//
// `client.snapshot(scope, {signal, etag})` reads once and answers `{notModified: true}` or
// `{snapshot, etag}` (createHttpSnapshotClient does it over GET /mvu/snapshot with 304s); an
// optional `client.write(request, {signal})` answers a write's result snapshot. Polling is bounded:
// one read at a time, `pollMs` clamped to [MIN_POLL_MS, MAX_POLL_MS]. When a read fails after a
// validated snapshot (network, 5xx) the binding keeps its own copy of the display data, marks
// `readState: 'failed'`, `error: 'MVU_READ_FAILED'` and refuses writes until a read succeeds; a
// refusal (401/403, a scope error) or an answer that is not a valid snapshot clears the data.
// The same failure again does not notify again.

export const MIN_POLL_MS = 250;
export const MAX_POLL_MS = 60000;
export const DEFAULT_POLL_MS = 2000;
const SCOPE_KEYS = ['playthroughId', 'sessionId', 'nodeId', 'variantId', 'endEventId', 'sessionFormatVersion',
  'mode', 'characterId'];

export class MvuBindingError extends Error {
  constructor(code, message, { status = null, cleared = false } = {}) {
    super(`${code}: ${message}`);
    this.name = 'MvuBindingError';
    this.code = code;
    this.status = status;
    this.cleared = cleared; // a refusal or an invalid answer: the data must not be shown any more
  }
}

function deepFreeze(value) {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const item of Object.values(value)) deepFreeze(item);
  }
  return value;
}

/** A snapshot the server may send, checked against the scope asked for; throws a clearing error. */
export function validateSnapshot(snapshot, scope) {
  const invalid = (why) => new MvuBindingError('MVU_SCOPE', why, { cleared: true });
  if (!snapshot || typeof snapshot !== 'object' || snapshot.version !== 1) throw invalid('invalid snapshot');
  if (!['available', 'unavailable'].includes(snapshot.status)) throw invalid('invalid snapshot status');
  if (!Number.isSafeInteger(snapshot.revision)) throw invalid('invalid snapshot revision');
  if (!snapshot.scope || typeof snapshot.scope !== 'object') throw invalid('snapshot without scope');
  for (const key of SCOPE_KEYS) {
    if (scope[key] !== undefined && snapshot.scope[key] !== scope[key]) throw invalid(`scope mismatch (${key})`);
  }
  return snapshot;
}

function abortError(signal) {
  return signal?.reason instanceof Error ? signal.reason : new DOMException('aborted', 'AbortError');
}

/** The HTTP transport of the binding: GET /mvu/snapshot?scope= with If-None-Match. */
export function createHttpSnapshotClient({ base = '/pmp-dsh-tavern/api/v1/mvu', headers = {}, fetcher = fetch } = {}) {
  return {
    async snapshot(scope, { signal, etag } = {}) {
      const response = await fetcher(`${base}/snapshot?scope=${encodeURIComponent(JSON.stringify(scope))}`,
        { signal, headers: { ...headers, ...(etag ? { 'If-None-Match': etag } : {}) } });
      if (response.status === 304) return { notModified: true };
      if (response.status >= 500) throw new MvuBindingError('MVU_READ_FAILED', `HTTP ${response.status}`);
      let body;
      try { body = await response.json(); } catch {
        throw new MvuBindingError('MVU_SCOPE', 'invalid snapshot answer', { cleared: true });
      }
      if (!response.ok) {
        throw new MvuBindingError(body?.code ?? 'MVU_SCOPE', body?.detail ?? `HTTP ${response.status}`,
          { status: response.status, cleared: true });
      }
      return { snapshot: body, etag: response.headers.get('ETag') };
    },
  };
}

function classify(error) {
  if (error instanceof MvuBindingError && error.cleared) return error;
  // A network failure, a 5xx, anything else unexpected: the read failed, the data stays ours.
  return new MvuBindingError('MVU_READ_FAILED', error?.message ?? String(error));
}

export async function createMvuCardBinding({ client, scope, signal, pollMs = DEFAULT_POLL_MS }) {
  if (!client || typeof client.snapshot !== 'function') throw new TypeError('client.snapshot is required');
  if (!scope || typeof scope !== 'object') throw new TypeError('scope is required');
  if (signal?.aborted) throw abortError(signal);
  const interval = Math.min(MAX_POLL_MS, Math.max(MIN_POLL_MS, Number(pollMs) || DEFAULT_POLL_MS));
  const lifetime = new AbortController();
  const onAbort = () => lifetime.abort(abortError(signal));
  signal?.addEventListener('abort', onAbort, { once: true });

  let first;
  try {
    first = await client.snapshot(scope, { signal: lifetime.signal });
    if (first.notModified) throw new MvuBindingError('MVU_SCOPE', 'a first read cannot be unchanged', { cleared: true });
    validateSnapshot(first.snapshot, scope);
  } catch (error) {
    signal?.removeEventListener('abort', onAbort);
    lifetime.abort();
    throw signal?.aborted ? abortError(signal) : error;
  }

  let state = deepFreeze({ ...structuredClone(first.snapshot), readState: 'ok', error: null });
  let etag = first.etag ?? null;
  let generation = 0; // bumped by every adopted write result: older polls cannot overwrite it
  let lastFailure = null;
  let disposed = false;
  let timer = null;
  const listeners = new Set();

  const notify = () => {
    for (const listener of [...listeners]) {
      try { listener(structuredClone(state)); } catch (error) { queueMicrotask(() => { throw error; }); }
    }
  };
  const adopt = (snapshot, tag) => {
    state = deepFreeze({ ...structuredClone(snapshot), readState: 'ok', error: null });
    etag = tag ?? null;
    lastFailure = null;
    notify();
  };
  const fail = (error) => {
    const failure = classify(error);
    const key = `${failure.code}|${failure.cleared}`;
    const base = failure.cleared ? { ...state, status: 'unavailable', variables: null } : state;
    state = deepFreeze({ ...base, readState: 'failed', error: failure.code });
    if (failure.cleared) etag = null;
    if (key !== lastFailure) {
      lastFailure = key;
      notify();
    }
  };

  const poll = async () => {
    timer = null;
    const started = generation;
    try {
      const read = await client.snapshot(scope, { signal: lifetime.signal, etag });
      if (disposed || started !== generation) return;
      if (read.notModified) {
        if (state.readState === 'failed' && state.variables !== null) adopt(state, etag);
      } else {
        validateSnapshot(read.snapshot, scope);
        adopt(read.snapshot, read.etag);
      }
    } catch (error) {
      if (disposed || started !== generation) return;
      fail(error);
    } finally {
      if (!disposed) timer = setTimeout(poll, interval);
    }
  };
  timer = setTimeout(poll, interval);

  const dispose = () => {
    if (disposed) return;
    disposed = true;
    clearTimeout(timer);
    listeners.clear();
    signal?.removeEventListener('abort', onAbort);
    lifetime.abort(new DOMException('disposed', 'AbortError'));
  };
  signal?.addEventListener('abort', dispose, { once: true });
  const alive = () => {
    if (disposed) throw new MvuBindingError('MVU_DISPOSED', 'binding disposed');
  };

  return {
    getSnapshot() {
      alive();
      return structuredClone(state);
    },
    subscribe(listener) {
      alive();
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    /** A write through `client.write`; refused while reads fail. The receipt keeps the write's own
     * result even when a poll has already moved the snapshot further. */
    async write(request, { signal: writeSignal } = {}) {
      alive();
      if (typeof client.write !== 'function') throw new MvuBindingError('MVU_UNSUPPORTED', 'this client cannot write');
      if (state.readState === 'failed') throw new MvuBindingError('MVU_READ_FAILED', 'reads are failing: writes wait');
      const result = await client.write(request, { signal: writeSignal ?? lifetime.signal });
      validateSnapshot(result, scope);
      const receipt = deepFreeze({ operationId: request.operationId, result: structuredClone(result) });
      if (!disposed && result.revision > state.revision) {
        generation += 1;
        adopt(result, null);
      }
      return receipt;
    },
    dispose,
  };
}
