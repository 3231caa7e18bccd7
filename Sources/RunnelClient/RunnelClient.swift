import Glibc
import RunnelJSON
import Synchronization

/// A client of `runneld` over its line protocol (`runnel://` TCP, `runnels://` TLS), for
/// async/await: requests matched to their replies by `ref`; subscriptions as `AsyncSequence`s,
/// each with a bounded buffer; reconnects with backoff that authenticate again and resume each
/// subscription from its last position, reporting a `Gap` where values may be missing.
///
/// I/O: one reader thread per client, on blocking POSIX sockets (`LineSocket`, the same code
/// the `runnel` CLI uses). It connects, authenticates, reads and parses every line, hands
/// replies to the continuations of the calls waiting for them and events to subscriptions,
/// and reconnects. A thread, not a task: `connect`, `poll`, `recv` and TLS block, and a
/// consumer too slow under `Overflow.wait` is made to stop the reading by blocking that thread,
/// none of which a task of the cooperative pool may do; and no event loop (libuv, NIO) is
/// linked for one connection. Callers queue their request lines in the connection's `Outbox`,
/// whose writer thread sends everything queued at once: a publisher's lines are gathered into
/// large writes rather than a system call (and a packet) each.
///
/// Thread rules: every method may be called from any task; the mutable state is behind
/// `state`'s mutex, and the callbacks of `ClientOptions` run on the reader thread. Lifetime
/// rule: the reader thread holds the client until `close()` (or a loss it will not reconnect
/// after) has ended it; a client dropped without `close()` keeps its connection.
public final class RunnelClient: Sendable {
    let endpoint: ServerEndpoint
    let token: String?
    let options: ClientOptions
    let state = Mutex(ClientState())
    /// A pipe whose read end wakes the reader thread from a backoff wait when the client closes.
    let wake: (read: Int32, write: Int32)

    private init(endpoint: ServerEndpoint, token: String?, options: ClientOptions) {
        self.endpoint = endpoint
        self.token = token
        self.options = options
        var ends: [Int32] = [-1, -1]
        precondition(pipe(&ends) == 0, "pipe failed: \(errno)")
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        wake = (ends[0], ends[1])
    }

    deinit {
        Glibc.close(wake.read)
        Glibc.close(wake.write)
    }

    /// Connects to `url` (`runnel://HOST[:PORT]`, `runnels://HOST:PORT`) and authenticates with
    /// `token` (`auth`), or sends a `ping` without one; returns once the server has answered.
    /// Throws `unauthorized`, `limit` (the server's `closing` line), `connection_lost` (nothing
    /// listening, a certificate not trusted...) or `timeout`: the first connection is not retried.
    public static func connect(
        url: String, token: String? = nil, options: ClientOptions = ClientOptions()
    ) async throws(RunnelError) -> RunnelClient {
        precondition(options.buffer >= 1, "a subscription's buffer holds at least one event")
        let endpoint = try ServerEndpoint(url: url)
        var options = options
        if endpoint.secure && options.tls == nil { options.tls = TLSSettings() }
        if !endpoint.secure { options.tls = nil }
        let client = RunnelClient(endpoint: endpoint, token: token, options: options)
        let started = await withCheckedContinuation { (started: CheckedContinuation<RunnelError?, Never>) in
            DetachedThread.start { client.run(reportingTo: started) }
        }
        if let started { throw started }
        return client
    }

    /// Whether a connection is up and set up now.
    public var isConnected: Bool { state.withLock { $0.ready && $0.final == nil } }

    /// The reason the last connection was lost.
    public var lastDisconnect: RunnelError? { state.withLock { $0.lastDisconnect } }

    /// Publishes `value` to `subject`; to a map subject (version 1.3), as the value of `key` (a
    /// map needs one; any other subject refuses it: `bad_request`). Without `reply`, returns nil
    /// once the line is queued for the connection (waiting while over 1 MiB is queued; a refusal
    /// goes to `onError`); with it, waits for the answer and returns how many subscriptions
    /// received the value. Either way it throws `timeout` when that has not happened within
    /// `timeout` (default: `ClientOptions.callTimeout`), the wait for a connection that is down
    /// included.
    @discardableResult
    public func publish(
        _ subject: String, _ value: JSONValue, key: String? = nil, reply: Bool = false, timeout: Duration? = nil
    ) async throws(RunnelError) -> Int? {
        var request = RequestLine(op: "pub")
        request.string("subject", subject)
        if let key { request.string("key", key) }
        request.json("value", value)
        return try await publish(request, reply: reply, timeout: timeout)
    }

    /// Publishes JSON already encoded, byte for byte.
    @discardableResult
    public func publish(
        _ subject: String, json: RawJSON, key: String? = nil, reply: Bool = false, timeout: Duration? = nil
    ) async throws(RunnelError) -> Int? {
        var request = RequestLine(op: "pub")
        request.string("subject", subject)
        if let key { request.string("key", key) }
        request.raw("value", json)
        return try await publish(request, reply: reply, timeout: timeout)
    }

    /// A `pub` request (a value, or a map key's removal), as `publish` sends it.
    func publish(_ request: RequestLine, reply: Bool, timeout: Duration?) async throws(RunnelError) -> Int? {
        let deadline = CallDeadline(op: "pub", timeout: timeout ?? options.callTimeout)
        guard reply else {
            guard try await readyConnection(deadline).enqueue(request.finished()) else { throw lostConnection }
            return nil
        }
        let answer = try await call(request, deadline)
        guard case .number(let receivers)? = answer.object["receivers"] else { return nil }
        return Int(receivers)
    }

    /// Sends any other request (`create`, `complete`, `error`, `delete`, `list`, `stats`,
    /// `ping`) and returns its reply; throws the server's error. `sub`, `unsub` and `auth` are
    /// refused (`bad_request`): use `subscribe`, `Subscription.unsubscribe` and the token.
    /// Throws `timeout` past `timeout` (default: `ClientOptions.callTimeout`).
    public func request(
        _ op: String, _ fields: KeyValuePairs<String, JSONValue> = [:], timeout: Duration? = nil
    ) async throws(RunnelError) -> JSONObject {
        guard !["sub", "unsub", "auth"].contains(op) else {
            throw RunnelError(code: "bad_request", message: "\(op): use subscribe, unsubscribe or the token")
        }
        var request = RequestLine(op: op)
        for (key, value) in fields { request.json(named: key, value) }
        return try await call(request, CallDeadline(op: op, timeout: timeout ?? options.callTimeout)).object
    }

    /// Subscribes to `subject` (a name or a pattern such as `sensors.>`); returns once the server
    /// has accepted the `sub`, else throws its error (`bad_expr` with its `stage`...), or
    /// `timeout` past `timeout` (default: `ClientOptions.callTimeout`; a subscription the
    /// server makes after that is removed again).
    public func subscribe(
        _ subject: String, _ options: SubscribeOptions = SubscribeOptions(), timeout: Duration? = nil
    ) async throws(RunnelError) -> Subscription {
        try await subscribe(subject, options, keepsTable: false, timeout: timeout)
    }

    /// `subscribe`, or `subscribeMap`'s subscription (`keepsTable`).
    func subscribe(
        _ subject: String, _ options: SubscribeOptions, keepsTable: Bool, timeout: Duration?
    ) async throws(RunnelError) -> Subscription {
        let deadline = CallDeadline(op: "sub", timeout: timeout ?? self.options.callTimeout)
        let connection = try await readyConnection(deadline)
        let sid = state.withLock { state in
            defer { state.nextSid += 1 }
            return "s\(state.nextSid)"
        }
        let subscription = Subscription(
            client: self, sid: sid, subject: subject, options: options, capacity: self.options.buffer,
            keepsTable: keepsTable)
        if subscription.isPattern && options.from != nil {
            throw RunnelError(code: "bad_request", message: "a pattern subscription has no position to start from")
        }
        let sentStart = subscription.position != nil || subscription.since != nil
        let line = try await exchange(on: connection, deadline) { ref, continuation in
            (.subscribe(subscription, sentStart: sentStart, continuation), subscription.request(ref: ref).line)
        }.get()
        guard case .reply(ok: true) = line.kind else { throw line.error }
        return subscription
    }

    /// Closes the connection, which disposes every subscription in the server at once;
    /// subscriptions here end, and calls waiting or made later throw `closed`. Lines already
    /// queued (publishes without reply) are written first, for up to `ClientOptions.timeout`.
    /// Returns once the reader thread has ended.
    public func close() async {
        let stopped = state.withLock { state -> (LineSocket?, Outbox?, [Subscription], [ClientStateWaiter])? in
            guard state.final == nil else { return nil }
            state.final = .closed
            let waiters =
                state.takePending().map(ClientStateWaiter.reply)
                + state.takeReadyWaiters().map(ClientStateWaiter.ready)
            return (state.connection, state.outbox, Array(state.subscriptions.values), waiters)
        }
        if let (connection, outbox, subscriptions, waiters) = stopped {
            for subscription in subscriptions { subscription.end(nil, dropBuffered: false) }
            for waiter in waiters { waiter.fail(.closed) }
            // What was published is written before the connection closes, unless the server has
            // not taken it within the timeout (it may be pacing this publisher, `backpressure`).
            if let outbox {
                let timeout = options.timeout
                let limit = Task {
                    try await Task.sleep(for: timeout)
                    outbox.stop()
                }
                await outbox.finish()
                limit.cancel()
            }
            connection?.shutdown()
            var byte: UInt8 = 1
            _ = Glibc.write(wake.write, &byte, 1)
        }
        await withCheckedContinuation { (ended: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.readerEnded { return true }
                state.endWaiters.append(ended)
                return false
            }
            if now { ended.resume() }
        }
    }

    // MARK: Calls

    /// The connection's outbox once it is set up: waits while the client reconnects, until
    /// `deadline` (then `timeout`); throws once it has stopped.
    func readyConnection(_ deadline: CallDeadline) async throws(RunnelError) -> Outbox {
        let immediate = state.withLock { state -> Result<Outbox, RunnelError>? in
            if let final = state.final { return .failure(final) }
            if state.ready, let outbox = state.outbox { return .success(outbox) }
            return nil
        }
        if let immediate { return try immediate.get() }
        let id = state.withLock { $0.takeRef() }
        let timer = deadline.whenPassed { [weak self] in
            let waiter = self?.state.withLock { $0.readyWaiters.removeValue(forKey: id) }
            waiter?.resume(returning: .failure(deadline.passed(connected: false)))
        }
        defer { timer.cancel() }
        let later = await withCheckedContinuation {
            (waiter: CheckedContinuation<Result<Outbox, RunnelError>, Never>) in
            let now = state.withLock { state -> Result<Outbox, RunnelError>? in
                if let final = state.final { return .failure(final) }
                if state.ready, let outbox = state.outbox { return .success(outbox) }
                if deadline.hasPassed { return .failure(deadline.passed(connected: false)) }
                state.readyWaiters[id] = waiter
                return nil
            }
            if let now { waiter.resume(returning: now) }
        }
        return try later.get()
    }

    /// Sends `request` with a fresh `ref` once connected, and returns its successful reply;
    /// throws `timeout` when neither has happened by `deadline`.
    func call(_ request: RequestLine, _ deadline: CallDeadline) async throws(RunnelError) -> ServerLine {
        let connection = try await readyConnection(deadline)
        let line = try await exchange(on: connection, deadline) { ref, continuation in
            var request = request
            request.integer("ref", ref)
            return (.call(continuation), request.finished())
        }.get()
        guard case .reply(ok: true) = line.kind else { throw line.error }
        return line
    }

    /// Registers a call waiting for its reply on `connection` under a fresh `ref`, sends the line
    /// `made` gives for it, and returns the reply, or `timeout` once `deadline` has passed (a
    /// `sub` is then left as `abandoned`, so a subscription its reply makes is removed).
    private func exchange(
        on connection: Outbox, _ deadline: CallDeadline,
        _ made: (Int, CheckedContinuation<Result<ServerLine, RunnelError>, Never>) -> (ClientState.Pending, [UInt8])
    ) async -> Result<ServerLine, RunnelError> {
        let ref = state.withLock { $0.takeRef() }
        let timer = deadline.whenPassed { [weak self] in
            let expired = self?.state.withLock { state -> ClientState.Pending? in
                guard let pending = state.pending.removeValue(forKey: ref) else { return nil }
                if case .subscribe(let subscription, _, _) = pending {
                    state.pending[ref] = .abandoned(sid: subscription.sid)
                }
                return pending
            }
            expired?.continuation?.resume(returning: .failure(deadline.passed(connected: true)))
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let (pending, line) = made(ref, continuation)
            let registered = state.withLock { state -> RunnelError? in
                if let final = state.final { return final }
                guard state.outbox === connection else { return state.lostConnection }
                // The timer fires once the instant has passed: registered before, it is found.
                if deadline.hasPassed { return deadline.passed(connected: true) }
                state.pending[ref] = pending
                return nil
            }
            if let registered { return continuation.resume(returning: .failure(registered)) }
            send(line, on: connection, ref: ref)
        }
    }

    /// Queues a registered call's line; when the connection has gone meanwhile, the call fails
    /// (unless the reader thread has failed it already).
    private func send(_ line: [UInt8], on connection: Outbox, ref: Int) {
        guard !connection.push(line) else { return }
        let failed = state.withLock { state in
            state.pending.removeValue(forKey: ref).map { ($0.continuation, state.lostConnection) }
        }
        if let (continuation, error) = failed { continuation?.resume(returning: .failure(error)) }
    }

    /// Why the connection a call was made on is gone.
    private var lostConnection: RunnelError { state.withLock { $0.lostConnection } }

    // MARK: Subscriptions

    /// Sends `unsub` for a subscription that has ended here (a connection lost meanwhile took the
    /// server's subscription with it).
    func unsubscribe(sid: String) async {
        guard isConnected else { return }
        var request = RequestLine(op: "unsub")
        request.string("sid", sid)
        _ = try? await call(request, CallDeadline(op: "unsub", timeout: options.callTimeout))
    }

    /// Drops an ended subscription.
    func forget(_ subscription: Subscription) {
        state.withLock { state in
            if state.subscriptions[subscription.sid] === subscription { state.subscriptions[subscription.sid] = nil }
        }
    }
}

/// One waiter `close()` fails: a call waiting for its reply, or for the connection.
///
/// Thread rules: resumed once, from any thread. Lifetime rule: none (a value).
enum ClientStateWaiter {
    case reply(CheckedContinuation<Result<ServerLine, RunnelError>, Never>)
    case ready(CheckedContinuation<Result<Outbox, RunnelError>, Never>)

    func fail(_ error: RunnelError) {
        switch self {
        case .reply(let continuation): continuation.resume(returning: .failure(error))
        case .ready(let continuation): continuation.resume(returning: .failure(error))
        }
    }
}
