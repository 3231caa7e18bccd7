import Glibc

/// The reader thread: it makes each connection (connect, `auth` or `ping`, every subscription
/// subscribed again from its position), reads it until it ends, and reconnects with backoff.
extension RunnelClient {
    /// The thread's body. The first connection's outcome goes to `started` (nil: connected); a
    /// failure there ends the thread, as later a loss it will not reconnect after does.
    func run(reportingTo started: CheckedContinuation<RunnelError?, Never>) {
        defer { readerEnded() }
        var connection: LineSocket
        do throws(RunnelError) {
            connection = try establish(reconnecting: false)
        } catch {
            state.withLock { $0.final = $0.final ?? error }
            started.resume(returning: error)
            return
        }
        started.resume(returning: nil)
        while true {
            let reason = read(connection)
            guard let reason = disconnected(connection, reason) else { return }
            options.onDisconnect?(reason)
            guard options.reconnect, reason.code != "unauthorized" else { return stop(reason) }
            var delay = options.backoff.first
            while true {
                guard pause(delay * Double.random(in: 0.5...1)) else { return }
                do throws(RunnelError) {
                    connection = try establish(reconnecting: true)
                    break
                } catch {
                    if error.code == "unauthorized" || error.code == "wrong_port" { return stop(error) }
                    delay = min(delay * 2, options.backoff.limit)
                }
            }
        }
    }

    /// Connects and sets the connection up: `auth` (or `ping`), then every live subscription's
    /// `sub` from its position, their events dispatched as they come; then `onReconnect` (when
    /// `reconnecting`), and the calls waiting for the connection are let through.
    private func establish(reconnecting: Bool) throws(RunnelError) -> LineSocket {
        let milliseconds = Int32(clamping: options.timeout.wholeMilliseconds)
        let connection = try LineSocket(
            host: endpoint.host, port: endpoint.port, timeoutMilliseconds: milliseconds, tls: options.tls)
        let (ref, subscriptions) = try state.withLock { state -> Result<(Int, [Subscription]), RunnelError> in
            if let final = state.final { return .failure(final) }
            state.connection = connection
            return .success((state.takeRef(), Array(state.subscriptions.values)))
        }.get()
        do throws(RunnelError) {
            var hello = RequestLine(op: token == nil ? "ping" : "auth")
            if let token { hello.string("token", token) }
            hello.integer("ref", ref)
            try connection.send(hello.finished())
            let deadline = MonotonicClock.milliseconds + Int64(milliseconds)
            try readUntil(connection, deadline: deadline) { line throws(RunnelError) -> Bool in
                guard case .reply(let ok) = line.kind, line.ref == String(ref) else { return false }
                guard ok else { throw line.error }
                return true
            }
            try resubscribe(subscriptions, on: connection, deadline: deadline)
        } catch {
            connection.shutdown()
            state.withLock { if $0.connection === connection { $0.connection = nil } }
            throw error
        }
        if reconnecting { options.onReconnect?() }
        let outbox = Outbox(socket: connection)
        let waiters = state.withLock { state -> [CheckedContinuation<Result<Outbox, RunnelError>, Never>]? in
            guard state.final == nil else { return nil }
            state.ready = true
            state.outbox = outbox
            return state.takeReadyWaiters()
        }
        // Closed meanwhile: `close` shut the connection down, and the reader will find it ended.
        guard let waiters else {
            outbox.stop()
            return connection
        }
        for waiter in waiters { waiter.resume(returning: .success(outbox)) }
        return connection
    }

    /// Sends every subscription's `sub` again and handles their replies (a refusal ends that
    /// subscription with its error; one unsubscribed meanwhile is removed from the server
    /// again, with an `unsub` whose reply nobody waits for).
    private func resubscribe(_ subscriptions: [Subscription], on connection: LineSocket, deadline: Int64)
        throws(RunnelError)
    {
        var waiting: [String: (Subscription, Bool)] = [:]
        let cause = state.withLock { $0.lastDisconnect }
        for subscription in subscriptions {
            let ref = state.withLock { $0.takeRef() }
            let (line, sentStart) = subscription.request(ref: ref)
            waiting[String(ref)] = (subscription, sentStart)
            try connection.send(line)
        }
        guard !waiting.isEmpty else { return }
        try readUntil(connection, deadline: deadline) { line throws(RunnelError) -> Bool in
            guard case .reply = line.kind, let ref = line.ref, let (subscription, sentStart) = waiting[ref] else {
                return false
            }
            waiting[ref] = nil
            if !subscription.answered(line, sentStart: sentStart, cause: cause), case .reply(ok: true) = line.kind {
                var unsubscribe = RequestLine(op: "unsub")
                unsubscribe.string("sid", subscription.sid)
                unsubscribe.integer("ref", state.withLock { $0.takeRef() })
                try connection.send(unsubscribe.finished())
            }
            return waiting.isEmpty
        }
    }

    /// Reads lines until `handled` says it is done with one, dispatching the others; throws the
    /// connection's end (its `closing` line's reason) or `timeout`.
    private func readUntil(
        _ connection: LineSocket, deadline: Int64, _ handled: (ServerLine) throws(RunnelError) -> Bool
    ) throws(RunnelError) {
        var closing: RunnelError?
        var woken = ConsumersToWake()
        defer { woken.wake() }
        while true {
            while let line = connection.bufferedLine() {
                guard let parsed = ServerLine(line) else {
                    if let wrongPort = RunnelError.wrongPort(firstLine: line, address: connection.address) {
                        throw wrongPort
                    }
                    continue
                }
                if case .event("closing") = parsed.kind { closing = parsed.error }
                if try handled(parsed) { return }
                dispatch(parsed, waking: &woken)
            }
            woken.wake()
            let remaining = deadline - MonotonicClock.milliseconds
            guard remaining > 0 else { throw RunnelError(code: "timeout", message: "no answer within the timeout") }
            do throws(RunnelError) {
                _ = try connection.receive(timeoutMilliseconds: Int32(min(remaining, 1000)))
            } catch {
                throw closing ?? error
            }
        }
    }

    /// Reads the connection until it ends; returns why (its `closing` line's reason when it had
    /// one, or a keep-alive `ping` left unanswered: `KeepAlive`).
    private func read(_ connection: LineSocket) -> RunnelError {
        var closing: RunnelError?
        var woken = ConsumersToWake()
        var keepAlive = KeepAlive(
            interval: options.keepalive, timeout: options.timeout, now: MonotonicClock.milliseconds)
        while true {
            while let _ = connection.withNextLine({ handle($0, closing: &closing, waking: &woken) }) {}
            woken.wake()
            do throws(RunnelError) {
                if try connection.receive(timeoutMilliseconds: keepAlive.wait(now: MonotonicClock.milliseconds)) {
                    keepAlive.heard(now: MonotonicClock.milliseconds)
                    continue
                }
            } catch {
                return closing ?? error
            }
            switch keepAlive.quiet(now: MonotonicClock.milliseconds) {
            case .nothing: break
            case .ping: ping()
            case .lost:
                return .connectionLost("no answer to a keep-alive ping within \(options.timeout.secondsText) s")
            }
        }
    }

    /// A `ping` whose answer nobody waits for (its `ref`, which no call has, keeps it from being
    /// taken for a failed publish's): any byte the server sends in return will do.
    private func ping() {
        let (outbox, ref) = state.withLock { ($0.outbox, $0.takeRef()) }
        var line = RequestLine(op: "ping")
        line.integer("ref", ref)
        _ = outbox?.push(line.finished())
    }

    /// Removes a subscription whose caller gave up on it (its deadline passed) before the server
    /// made it, with an `unsub` whose reply nobody waits for.
    private func unsubscribe(abandoned sid: String) {
        let (outbox, ref) = state.withLock { ($0.outbox, $0.takeRef()) }
        var line = RequestLine(op: "unsub")
        line.string("sid", sid)
        line.integer("ref", ref)
        _ = outbox?.push(line.finished())
    }

    /// One line: the common `next` event on the fast path (`NextEventShape`), any other parsed.
    private func handle(_ raw: UnsafeRawBufferPointer, closing: inout RunnelError?, waking woken: inout ConsumersToWake)
    {
        if let next = NextEventShape.match(raw) {
            let sid = String(decoding: UnsafeRawBufferPointer(rebasing: raw[next.sid]), as: UTF8.self)
            guard let subscription = state.withLock({ $0.subscriptions[sid] }) else { return }
            if options.overflow == .wait { subscription.waitForRoom() }
            let waiting = subscription.received(
                json: Array(raw[next.value]),
                from: next.subject.map { String(decoding: UnsafeRawBufferPointer(rebasing: raw[$0]), as: UTF8.self) },
                position: next.position.map {
                    String(decoding: UnsafeRawBufferPointer(rebasing: raw[$0]), as: UTF8.self)
                })
            if waiting { woken.add(subscription) }
            return
        }
        guard let line = ServerLine(Array(raw)) else { return }
        if case .event("closing") = line.kind { closing = line.error }
        dispatch(line, waking: &woken)
    }

    /// A parsed line: a reply to its waiting call, an event to its subscription.
    private func dispatch(_ line: ServerLine, waking woken: inout ConsumersToWake) {
        switch line.kind {
        case .reply:
            guard let ref = line.ref.flatMap({ Int($0) }) else {
                // Only a `pub` without `ref` is answered without one, and only when it failed.
                if let onError = options.onError {
                    onError(line.error)
                } else {
                    StandardErrorNote.write("runnel: a publish failed: \(line.error)\n")
                }
                return
            }
            guard let pending = state.withLock({ $0.pending.removeValue(forKey: ref) }) else { return }
            if case .abandoned(let sid) = pending {
                if case .reply(ok: true) = line.kind { unsubscribe(abandoned: sid) }
                return
            }
            if case .subscribe(let subscription, let sentStart, _) = pending,
                subscription.answered(line, sentStart: sentStart, cause: nil)
            {
                state.withLock { $0.subscriptions[subscription.sid] = subscription }
            }
            pending.continuation?.resume(returning: .success(line))
        case .event(let name):
            guard name != "closing", let sid = line.sid,
                let subscription = state.withLock({ $0.subscriptions[sid] })
            else { return }
            if options.overflow == .wait { subscription.waitForRoom() }
            let waiting =
                if name == "next", let range = line.valueRange {
                    subscription.received(
                        json: Array(line.bytes[range]), from: line.subject, position: line.pos, time: line.ts,
                        key: line.key)
                } else {
                    subscription.received(line)
                }
            if waiting { woken.add(subscription) }
        }
    }

    /// After a connection ends: the calls waiting on it fail with `reason`, and no map table is
    /// current any more; nil when the client was closed meanwhile (nothing more to do).
    private func disconnected(_ connection: LineSocket, _ reason: RunnelError) -> RunnelError? {
        connection.shutdown()
        let (pending, closed, outbox, subscriptions) = state.withLock { state in
            defer { state.outbox = nil }
            state.ready = false
            state.connection = nil
            state.lastDisconnect = reason
            return (state.takePending(), state.final != nil, state.outbox, Array(state.subscriptions.values))
        }
        outbox?.stop()
        for call in pending { call.resume(returning: .failure(reason)) }
        for subscription in subscriptions { subscription.lost() }
        return closed ? nil : reason
    }

    /// Gives up for good: subscriptions end with `reason`, calls waiting or made later throw it.
    private func stop(_ reason: RunnelError) {
        let (subscriptions, waiters) = state.withLock { state in
            state.final = state.final ?? reason
            return (Array(state.subscriptions.values), state.takeReadyWaiters())
        }
        for subscription in subscriptions { subscription.end(reason, dropBuffered: false) }
        for waiter in waiters { waiter.resume(returning: .failure(reason)) }
    }

    /// Waits `delay`, or less when the client closes; false when it has.
    private func pause(_ delay: Duration) -> Bool {
        var descriptor = pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)
        _ = poll(&descriptor, 1, Int32(clamping: delay.wholeMilliseconds))
        return state.withLock { $0.final == nil }
    }

    private func readerEnded() {
        let waiters = state.withLock { state in
            state.readerEnded = true
            defer { state.endWaiters = [] }
            return state.endWaiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// The subscriptions whose consumers wait for events the reader has put since it last woke them:
/// woken together once every line read is handled.
///
/// Thread rules: the reader thread's, a local value. Lifetime rule: none.
struct ConsumersToWake {
    private var subscriptions: [Subscription] = []

    mutating func add(_ subscription: Subscription) {
        if subscriptions.last !== subscription { subscriptions.append(subscription) }
    }

    mutating func wake() {
        for subscription in subscriptions { subscription.wake() }
        subscriptions.removeAll(keepingCapacity: true)
    }
}

/// Unbuffered notes on stderr, for a refused quiet publish no `onError` takes.
///
/// Thread rules: stateless, any thread. Lifetime rule: none.
enum StandardErrorNote {
    static func write(_ text: String) {
        var text = text
        _ = text.withUTF8 { Glibc.write(2, $0.baseAddress, $0.count) }
    }
}
