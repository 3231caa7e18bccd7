import RunnelJSON
import Synchronization

/// One `sub`: an `AsyncSequence` of `SubscriptionEvent`s (values with their positions, gaps)
/// that ends when the subscription completes, after `unsubscribe()` or the client's `close()`,
/// and throws the `RunnelError` that ended it otherwise (`eval`, `subject_error`,
/// `unauthorized`, or a lost connection the client will not reconnect).
///
/// The client's reader thread puts events into a bounded buffer (`ClientOptions.buffer`); the
/// consumer takes them. A consumer waiting is woken once the reader has handled every line it
/// has read (`wake`), not at each event: one wake-up per read, not per value. Past the bound, `drop` counts the values it drops and reports them as
/// one `Gap` (`overflow`) before the next event; `wait` makes the reader thread wait for room
/// (`waitForRoom`). After a reconnect the subscription is made again from its last position;
/// when the server cannot continue from there, a `Gap` (`not_resumed`) comes first and values
/// at or before the last position seen are skipped once.
///
/// On a map subject (version 1.3) it yields the map's writes, each `Value` with its `key` (the
/// snapshot's, then the changes'), and neither its removals nor the end of its snapshot; its
/// position is the snapshot's once `synced` has come. A `MapSubscription` is one of these that
/// keeps the table (`state.table`) and yields every change (`nextEvent`).
///
/// Thread rules: everything is behind `state`'s mutex; `put`, `answered`, `event` and
/// `waitForRoom` are the reader thread's, the iteration one consumer task's at a time.
/// Lifetime rule: the client holds it while it is live; it holds the client (to unsubscribe)
/// until it ends, when the client lets it go.
public final class Subscription: AsyncSequence, Sendable {
    public typealias Element = SubscriptionEvent

    /// The subscription's id, which it keeps across reconnects.
    public let sid: String
    public let subject: String
    let isPattern: Bool
    let stages: [JSONValue]
    /// Whether each `sub` asks for `"conflate": true`.
    let conflates: Bool
    /// `since`, `until` and `ts` (version 1.3): `since` until a position is known, then `from`.
    let since: Int64?
    let until: Int64?
    let timestamps: Bool
    let client: RunnelClient
    let capacity: Int
    let state: Mutex<SubscriptionState>
    private let room = Semaphore()

    /// `keepsTable`: a `MapSubscription`'s.
    init(
        client: RunnelClient, sid: String, subject: String, options: SubscribeOptions, capacity: Int,
        keepsTable: Bool = false
    ) {
        self.client = client
        self.sid = sid
        self.subject = subject
        isPattern = subject.split(separator: ".").contains { $0 == "*" || $0 == ">" }
        stages = options.stages
        conflates = options.conflate
        since = options.since
        until = options.until
        timestamps = options.timestamps
        self.capacity = capacity
        var initial = SubscriptionState()
        if let from = options.from, !isPattern { initial.positions[subject] = from }
        if keepsTable { initial.table = MapTable() }
        state = Mutex(initial)
    }

    /// The position of the newest value of a one-subject subscription (or its `from`): give it as
    /// `from` later to continue right after it. nil for a pattern, and while a map's snapshot is
    /// read.
    public var position: String? {
        isPattern ? nil : state.withLock { $0.inSnapshot ? nil : $0.positions[subject] }
    }

    /// Ends the subscription here (what it buffered is dropped) and in the server (`unsub`).
    public func unsubscribe() async {
        guard end(nil, dropBuffered: true) else { return }
        await client.unsubscribe(sid: sid)
    }

    public func makeAsyncIterator() -> Iterator { Iterator(subscription: self) }

    /// Takes the subscription's events one by one.
    ///
    /// Thread rules: one task at a time. Lifetime rule: holds the subscription.
    public struct Iterator: AsyncIteratorProtocol {
        let subscription: Subscription

        public mutating func next() async throws -> SubscriptionEvent? {
            while let event = try await subscription.nextEvent() {
                switch event {
                case .value(let value): return .value(value)
                case .gap(let gap): return .gap(gap)
                case .removed, .synced: continue  // only a map subscription's are put
                }
            }
            return nil
        }
    }

    // MARK: The consumer's side

    /// The next event: what `Iterator` and `MapSubscription.Iterator` yield.
    func nextEvent() async throws -> MapEvent? {
        let taken = state.withLock { state -> SubscriptionState.Taken? in state.take() }
        if let taken { return try deliver(taken) }
        let awaited = await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<SubscriptionState.Taken, Never>) in
                let now = state.withLock { state -> SubscriptionState.Taken? in
                    if let taken = state.take() { return taken }
                    if Task.isCancelled { return .cancelled }
                    state.waiter = waiter
                    return nil
                }
                if let now { waiter.resume(returning: now) }
            }
        } onCancel: {
            state.withLock { $0.waiter.take() }?.resume(returning: .cancelled)
        }
        return try deliver(awaited)
    }

    /// What `take` found, as `next` returns it; room made for a reader thread that waits.
    private func deliver(_ taken: SubscriptionState.Taken) throws -> MapEvent? {
        switch taken {
        case .event(let event, let madeRoom):
            if madeRoom { room.signal() }
            return event
        case .end(nil): return nil
        case .end(let error?): throw error
        case .cancelled: throw CancellationError()
        }
    }

    // MARK: The reader thread's side

    /// The `sub` request for the current connection: with positions, and `from` the last
    /// position seen (or the one given) when there is one, else `since` when given; and
    /// whether it said where to start (either).
    func request(ref: Int) -> (line: [UInt8], sentStart: Bool) {
        var request = RequestLine(op: "sub")
        request.string("subject", subject)
        request.string("sid", sid)
        request.bool("positions", true)
        if !stages.isEmpty { request.json("ops", .array(stages)) }
        let from = position
        // Resuming by position once there is one: `since` starts the subscription only.
        if let from {
            request.string("from", from)
        } else if let since {
            request.integer("since", Int(since))
        }
        if let until { request.integer("until", Int(until)) }
        if timestamps { request.bool("ts", true) }
        if conflates { request.bool("conflate", true) }
        request.integer("ref", ref)
        // Where it starts was said (a position, or a time whose `resumed` tells what was kept).
        return (request.finished(), from != nil || since != nil)
    }

    /// The reply to this subscription's `sub`, handled before any of its events. True when the
    /// server accepted it for a subscription still live; a refusal ends the subscription with
    /// its error.
    func answered(_ reply: ServerLine, sentStart: Bool, cause: RunnelError?) -> Bool {
        guard case .reply(ok: true) = reply.kind else {
            end(reply.error, dropBuffered: false)
            return false
        }
        let (live, waiting) = state.withLock { state -> (Bool, Bool) in
            guard !state.hasEnded else { return (false, false) }
            var waiting = false
            if reply.resumed == false || (state.subscribedBefore && !sentStart) {
                state.skip = state.positions.compactMapValues(Position.init)
                let gap = Gap(.notResumed, cause: state.subscribedBefore ? cause : nil)
                waiting = state.put(.gap(gap), capacity: capacity)
            }
            state.subscribedBefore = true
            state.answered(resumed: reply.resumed == true, pattern: isPattern)
            return (true, waiting)
        }
        if waiting { wake() }
        return live
    }

    /// A `next` event's value: skipped when a subscription that could not resume sees again what
    /// it had; else remembered as the newest position and put in the buffer (a map
    /// subscription's: written to its table, `write`). True when a consumer waits to be woken
    /// (`wake`).
    func received(
        json: [UInt8], from source: String?, position: String?, time: Int64? = nil, key: String? = nil
    ) -> Bool {
        let subject = source ?? self.subject
        let value = Value(json: json, subject: subject, position: position, time: time, key: key)
        return state.withLock { state -> Bool in
            if state.table != nil { return write(value, in: &state) }
            guard state.seen(subject, position: position, keyed: key != nil) else { return false }
            return state.put(.value(value), capacity: capacity)
        }
    }

    /// Any other event of this subscription (`dropped`, `completed`, `error`; a map's `removed`
    /// and `synced`). True when a consumer waits to be woken (`wake`).
    func received(_ line: ServerLine) -> Bool {
        guard case .event(let name) = line.kind else { return false }
        switch name {
        case "dropped": return put(.gap(Gap(.dropped, count: line.count)))
        case "removed": return removed(line)
        case "synced": return synced(line)
        case "completed": end(nil, dropBuffered: false)
        case "error": end(line.error, dropBuffered: false)
        default: break
        }
        return false
    }

    /// Gives the consumer waiting what has been put since it began to wait.
    func wake() {
        if let (waiter, taken) = state.withLock({ $0.wake() }) { waiter.resume(returning: taken) }
    }

    /// Blocks the reader thread while the buffer is full (`Overflow.wait`), the consumer woken
    /// first.
    func waitForRoom() {
        wake()
        while state.withLock({ $0.mustWaitForRoom(capacity: capacity) }) { room.wait() }
    }

    /// Ends it: at once for the consumer when `dropBuffered`, else after what is buffered. False
    /// when it had ended already.
    @discardableResult
    func end(_ error: RunnelError?, dropBuffered: Bool) -> Bool {
        let (ended, woken, madeRoom, syncWaiters) = state.withLock { state in
            let (ended, woken, madeRoom) = state.end(error, dropBuffered: dropBuffered)
            return (ended, woken, madeRoom, ended ? state.table?.takeSyncWaiters() ?? [] : [])
        }
        guard ended else { return false }
        client.forget(self)
        if madeRoom { room.signal() }
        if let (waiter, taken) = woken { waiter.resume(returning: taken) }
        for waiter in syncWaiters { waiter.resume(returning: error) }
        return true
    }

    private func put(_ event: MapEvent) -> Bool {
        state.withLock { $0.put(event, capacity: capacity) }
    }
}
