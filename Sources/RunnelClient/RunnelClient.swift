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

    /// Publishes `value` to `subject`. Without `reply`, returns nil once the line is queued for
    /// the connection (waiting while over 1 MiB is queued; a refusal goes to `onError`); with it,
    /// waits for the answer and returns how many subscriptions received the value.
    @discardableResult
    public func publish(_ subject: String, _ value: JSONValue, reply: Bool = false) async throws(RunnelError) -> Int? {
        var request = RequestLine(op: "pub")
        request.string("subject", subject)
        request.json("value", value)
        return try await publish(request, reply: reply)
    }

    /// Publishes JSON already encoded, byte for byte.
    @discardableResult
    public func publish(_ subject: String, json: RawJSON, reply: Bool = false) async throws(RunnelError) -> Int? {
        var request = RequestLine(op: "pub")
        request.string("subject", subject)
        request.raw("value", json)
        return try await publish(request, reply: reply)
    }

    private func publish(_ request: RequestLine, reply: Bool) async throws(RunnelError) -> Int? {
        guard reply else {
            guard try await readyConnection().enqueue(request.finished()) else { throw lostConnection }
            return nil
        }
        let answer = try await call(request)
        guard case .number(let receivers)? = answer.object["receivers"] else { return nil }
        return Int(receivers)
    }

    /// Sends any other request (`create`, `complete`, `error`, `delete`, `list`, `stats`,
    /// `ping`) and returns its reply; throws the server's error. `sub`, `unsub` and `auth` are
    /// refused (`bad_request`): use `subscribe`, `Subscription.unsubscribe` and the token.
    public func request(_ op: String, _ fields: KeyValuePairs<String, JSONValue> = [:]) async throws(RunnelError)
        -> JSONObject
    {
        guard !["sub", "unsub", "auth"].contains(op) else {
            throw RunnelError(code: "bad_request", message: "\(op): use subscribe, unsubscribe or the token")
        }
        var request = RequestLine(op: op)
        for (key, value) in fields { request.json(named: key, value) }
        return try await call(request).object
    }

    /// Subscribes to `subject` (a name or a pattern such as `sensors.>`); returns once the server
    /// has accepted the `sub`, else throws its error (`bad_expr` with its `stage`...).
    public func subscribe(_ subject: String, _ options: SubscribeOptions = SubscribeOptions())
        async throws(RunnelError) -> Subscription
    {
        let connection = try await readyConnection()
        let sid = state.withLock { state in
            defer { state.nextSid += 1 }
            return "s\(state.nextSid)"
        }
        let subscription = Subscription(
            client: self, sid: sid, subject: subject, options: options, capacity: self.options.buffer)
        if subscription.isPattern && options.from != nil {
            throw RunnelError(code: "bad_request", message: "a pattern subscription has no position to start from")
        }
        let sentFrom = subscription.position != nil
        let reply = await withCheckedContinuation { continuation in
            let ref = register(on: connection, continuation) { _ in
                .subscribe(subscription, sentFrom: sentFrom, continuation)
            }
            guard let ref else { return }
            send(subscription.request(ref: ref).line, on: connection, ref: ref)
        }
        let line = try reply.get()
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
                state.takePending().map(ClientStateWaiter.reply) + state.readyWaiters.map(ClientStateWaiter.ready)
            state.readyWaiters = []
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

    /// The connection's outbox once it is set up: waits while the client reconnects; throws once
    /// it has stopped.
    func readyConnection() async throws(RunnelError) -> Outbox {
        let immediate = state.withLock { state -> Result<Outbox, RunnelError>? in
            if let final = state.final { return .failure(final) }
            if state.ready, let outbox = state.outbox { return .success(outbox) }
            return nil
        }
        if let immediate { return try immediate.get() }
        let later = await withCheckedContinuation {
            (waiter: CheckedContinuation<Result<Outbox, RunnelError>, Never>) in
            let now = state.withLock { state -> Result<Outbox, RunnelError>? in
                if let final = state.final { return .failure(final) }
                if state.ready, let outbox = state.outbox { return .success(outbox) }
                state.readyWaiters.append(waiter)
                return nil
            }
            if let now { waiter.resume(returning: now) }
        }
        return try later.get()
    }

    /// Sends `request` with a fresh `ref` once connected, and returns its successful reply.
    func call(_ request: RequestLine) async throws(RunnelError) -> ServerLine {
        let connection = try await readyConnection()
        let reply = await withCheckedContinuation { continuation in
            guard let ref = register(on: connection, continuation, { _ in .call(continuation) }) else { return }
            var request = request
            request.integer("ref", ref)
            send(request.finished(), on: connection, ref: ref)
        }
        let line = try reply.get()
        guard case .reply(ok: true) = line.kind else { throw line.error }
        return line
    }

    /// Notes a call waiting for its reply on `connection`; nil (and `continuation` resumed with
    /// the failure) when that connection is no longer the one in use.
    private func register(
        on connection: Outbox, _ continuation: CheckedContinuation<Result<ServerLine, RunnelError>, Never>,
        _ pending: (Int) -> ClientState.Pending
    ) -> Int? {
        let ref = state.withLock { state -> Result<Int, RunnelError> in
            if let final = state.final { return .failure(final) }
            guard state.outbox === connection else { return .failure(state.lostConnection) }
            let ref = state.takeRef()
            state.pending[ref] = pending(ref)
            return .success(ref)
        }
        switch ref {
        case .success(let ref): return ref
        case .failure(let error):
            continuation.resume(returning: .failure(error))
            return nil
        }
    }

    /// Queues a registered call's line; when the connection has gone meanwhile, the call fails
    /// (unless the reader thread has failed it already).
    private func send(_ line: [UInt8], on connection: Outbox, ref: Int) {
        guard !connection.push(line) else { return }
        let failed = state.withLock { state in
            state.pending.removeValue(forKey: ref).map { ($0.continuation, state.lostConnection) }
        }
        if let (continuation, error) = failed { continuation.resume(returning: .failure(error)) }
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
        _ = try? await call(request)
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
