// The bubble client: a card's message view follows the state snapshot of its scope, and writes
// through a capability when the host granted the card's script a write.
//
//   const binding = await createMvuCardBinding({ client, scope, signal, pollMs, writeGrant });
//   binding.getSnapshot(); const stop = binding.subscribe((snapshot) => ...);
//   await binding.write({ operation: 'patch', value: [...] });   // the new snapshot
//   await binding.writeOperation({ operation, value });          // {operationId, result}
//   const cleanup = binding.dispose(); (await cleanup).revoked || await binding.retryCleanup();
//
// `client.snapshot(scope, {signal, etag})` reads once and answers `{notModified: true}` or
// `{snapshot, etag}`; `client.bind(body, {signal})`, `client.write(request, {signal})` and
// `client.revoke(capability)` are the card routes (createHttpSnapshotClient does all four over
// HTTP). Polling is bounded: one read at a time, `pollMs` clamped to [MIN_POLL_MS, MAX_POLL_MS].
// When a read fails after a validated snapshot (network, 5xx) the binding keeps its own copy of
// the display data, marks `readState: 'failed'`, `error: 'MVU_READ_FAILED'` and refuses writes
// until a read succeeds; a refusal (401/403, a scope error) or an answer that is not a valid
// snapshot clears the data. The same failure again does not notify again.
//
// With `writeGrant: {grantId, sourceIdentity}` the binding binds as the original's client does:
// it makes the binding id itself (a UUID), so a bind whose answer is lost can still be revoked;
// each write sends the revision the binding observed and a fresh operation id; a write whose
// save the server answered after the caller aborted rejects with an AbortError that carries the
// save's `operationReceipt`; dispose revokes the capability (a keepalive request), and a revoke
// that fails stays pending for `retryCleanup()`.

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

/** An answer's JSON body, or the binding error its status and problem say. */
async function answerOf(response, failure) {
  if (response.status >= 500) throw new MvuBindingError(failure, `HTTP ${response.status}`, { status: response.status });
  let body;
  try { body = await response.json(); } catch {
    throw new MvuBindingError('MVU_SCOPE', 'invalid answer', { cleared: true });
  }
  if (!response.ok) {
    throw new MvuBindingError(body?.code ?? 'MVU_SCOPE', body?.detail ?? `HTTP ${response.status}`,
      { status: response.status, cleared: true });
  }
  return body;
}

/** The HTTP transport of the binding: GET /mvu/snapshot?scope= with If-None-Match, and the card
 * routes POST /mvu/card-binding, /mvu/card-write and /mvu/card-binding/revoke. */
export function createHttpSnapshotClient({ base = '/pmp-dsh-tavern/api/v1/mvu', headers = {}, fetcher = fetch } = {}) {
  const post = (path, body, options) => fetcher(`${base}/${path}`, {
    method: 'POST', headers: { ...headers, 'Content-Type': 'application/json' }, body: JSON.stringify(body), ...options,
  });
  return {
    async snapshot(scope, { signal, etag } = {}) {
      const response = await fetcher(`${base}/snapshot?scope=${encodeURIComponent(JSON.stringify(scope))}`,
        { signal, headers: { ...headers, ...(etag ? { 'If-None-Match': etag } : {}) } });
      if (response.status === 304) return { notModified: true };
      return { snapshot: await answerOf(response, 'MVU_READ_FAILED'), etag: response.headers.get('ETag') };
    },
    async bind(body, { signal } = {}) {
      return answerOf(await post('card-binding', body, { signal }), 'MVU_BIND_FAILED');
    },
    async write(request, { signal } = {}) {
      return answerOf(await post('card-write', request, { signal }), 'MVU_WRITE_FAILED');
    },
    async revoke(capability) {
      // keepalive: a revoke sent as the page goes away still reaches the server.
      return answerOf(await post('card-binding/revoke', { capability }, { keepalive: true }), 'MVU_REVOKE_FAILED');
    },
  };
}

function sameSnapshot(snapshot, state) {
  const { readState, error, ...held } = state;
  return JSON.stringify(snapshot) === JSON.stringify(held);
}

function classify(error) {
  if (error instanceof MvuBindingError && error.cleared) return error;
  // A network failure, a 5xx, anything else unexpected: the read failed, the data stays ours.
  return new MvuBindingError('MVU_READ_FAILED', error?.message ?? String(error));
}

/** Revokes a capability; a failed revoke is kept to retry (the cleanup of a disposed binding). */
function revoker(client) {
  const pending = new Set();
  const attempt = async () => {
    const errors = [];
    for (const capability of [...pending]) {
      try {
        await client.revoke(capability);
        pending.delete(capability);
      } catch (error) {
        errors.push(error);
      }
    }
    return pending.size === 0 ? { revoked: true } : { revoked: false, error: errors[0], pending: pending.size };
  };
  return {
    revoke(capability) {
      if (typeof client.revoke !== 'function') return Promise.resolve({ revoked: true });
      pending.add(capability);
      return attempt();
    },
    retry: () => (pending.size === 0 ? Promise.resolve({ revoked: true }) : attempt()),
  };
}

/** Binds with a binding id made here: known before the answer, so a lost answer is revoked too. */
async function bindWith(client, scope, writeGrant, signal, cleanup) {
  if (typeof client.bind !== 'function') throw new MvuBindingError('MVU_UNSUPPORTED', 'this client cannot bind');
  const bindingId = crypto.randomUUID();
  let answer;
  try {
    answer = await client.bind({ scope, grantId: writeGrant.grantId, sourceIdentity: writeGrant.sourceIdentity,
      bindingId }, { signal });
    if (!answer || answer.capability !== bindingId) throw new MvuBindingError('MVU_SCOPE', 'capability mismatch', { cleared: true });
    validateSnapshot(answer.snapshot, scope);
  } catch (error) {
    // The server may have made the binding before the answer was lost, refused or aborted.
    await cleanup.revoke(bindingId);
    throw error;
  }
  return { capability: bindingId, snapshot: answer.snapshot };
}

export async function createMvuCardBinding({ client, scope, signal, pollMs = DEFAULT_POLL_MS, writeGrant = null }) {
  if (!client || typeof client.snapshot !== 'function') throw new TypeError('client.snapshot is required');
  if (!scope || typeof scope !== 'object') throw new TypeError('scope is required');
  if (signal?.aborted) throw abortError(signal);
  const interval = Math.min(MAX_POLL_MS, Math.max(MIN_POLL_MS, Number(pollMs) || DEFAULT_POLL_MS));
  const lifetime = new AbortController();
  const onAbort = () => lifetime.abort(abortError(signal));
  signal?.addEventListener('abort', onAbort, { once: true });
  const cleanup = revoker(client);

  let first;
  let capability = null;
  try {
    first = await client.snapshot(scope, { signal: lifetime.signal });
    if (first.notModified) throw new MvuBindingError('MVU_SCOPE', 'a first read cannot be unchanged', { cleared: true });
    validateSnapshot(first.snapshot, scope);
    if (writeGrant) {
      const bound = await bindWith(client, scope, writeGrant, lifetime.signal, cleanup);
      capability = bound.capability;
      if (bound.snapshot.revision >= first.snapshot.revision) first = { snapshot: bound.snapshot, etag: first.etag };
    }
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
        const newer = read.snapshot.revision >= state.revision && !sameSnapshot(read.snapshot, state);
        if (state.readState === 'failed' || newer) adopt(read.snapshot, read.etag);
        else etag = read.etag ?? null; // the state it has (a write's result read back): nothing to tell
      }
    } catch (error) {
      if (disposed || started !== generation) return;
      fail(error);
    } finally {
      if (!disposed) timer = setTimeout(poll, interval);
    }
  };
  timer = setTimeout(poll, interval);

  let ended = null;
  const dispose = () => {
    if (disposed) return ended;
    disposed = true;
    clearTimeout(timer);
    listeners.clear();
    signal?.removeEventListener('abort', onAbort);
    lifetime.abort(new DOMException('disposed', 'AbortError'));
    ended = capability === null ? Promise.resolve({ revoked: true }) : cleanup.revoke(capability);
    capability = null;
    return ended;
  };
  signal?.addEventListener('abort', dispose, { once: true });
  const alive = () => {
    if (disposed) throw new MvuBindingError('MVU_DISPOSED', 'binding disposed');
  };

  /** A write's request: the binding's capability, the revision it observed, a fresh operation id. */
  const requestOf = ({ operation, value, cause = 'script', operationId, expectedRevision }) => ({
    ...(capability === null ? {} : { capability }), operation, value, cause,
    expectedRevision: expectedRevision ?? state.currentRevision ?? state.revision,
    operationId: operationId ?? crypto.randomUUID(),
  });

  const writeOperation = async (request, { signal: writeSignal } = {}) => {
    alive();
    if (typeof client.write !== 'function') throw new MvuBindingError('MVU_UNSUPPORTED', 'this client cannot write');
    if (state.readState === 'failed') throw new MvuBindingError('MVU_READ_FAILED', 'reads are failing: writes wait');
    if (writeSignal?.aborted) throw abortError(writeSignal);
    const sent = requestOf(request);
    const result = await client.write(sent, { signal: writeSignal ?? lifetime.signal });
    validateSnapshot(result, scope);
    const receipt = deepFreeze({ operationId: sent.operationId, result: structuredClone(result) });
    if (!disposed && result.revision > state.revision) {
      generation += 1;
      adopt(result, null);
    }
    if (writeSignal?.aborted) {
      // Saved before the abort landed: the caller learns what was saved, never a silent loss.
      const aborted = new DOMException('aborted after the write was saved', 'AbortError');
      aborted.operationReceipt = receipt;
      throw aborted;
    }
    return receipt;
  };

  return {
    getSnapshot() {
      alive();
      return { ...structuredClone(state), writable: capability !== null };
    },
    subscribe(listener) {
      alive();
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    /** A write through `client.write`; refused while reads fail. The receipt keeps the write's own
     * result even when a poll has already moved the snapshot further. */
    writeOperation,
    /** :func:`writeOperation`'s result snapshot. */
    async write(request, options) {
      return structuredClone((await writeOperation(request, options)).result);
    },
    dispose,
    /** After a dispose whose revoke failed: revoke again (resolves `{revoked}`). */
    retryCleanup: () => cleanup.retry(),
  };
}
