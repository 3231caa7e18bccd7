/// A subscription's mutable part, always behind its mutex: the buffered events and the counts of
/// those dropped, the consumer waiting, the positions seen and those to skip after a resume
/// that failed, a map's snapshot being read, and a map subscription's table.
///
/// Thread rules: only inside `Subscription.state.withLock`. Lifetime rule: the subscription's.
struct SubscriptionState {
    /// What the consumer gets from `take`.
    enum Taken {
        /// An event; `madeRoom` when the reader thread waits for room and must be woken.
        case event(MapEvent, madeRoom: Bool)
        case end(RunnelError?)
        case cancelled
    }

    /// A map subscription's events (`MapEvent`); a plain subscription's are values and gaps.
    private var events: [MapEvent] = []
    /// Where unread events start in `events`.
    private var head = 0
    /// Values dropped since the last gap reported (`Overflow.drop`).
    private var overflowed = 0
    private var ended = false
    private var error: RunnelError?
    /// Whether the reader thread waits on the room semaphore.
    private var readerWaits = false
    var waiter: CheckedContinuation<Taken, Never>?
    /// The newest position seen, per source subject.
    var positions: [String: String] = [:]
    /// After a subscription that could not resume: what a value must pass to be shown.
    var skip: [String: Position] = [:]
    var subscribedBefore = false
    /// A map's snapshot: from a reply that did not resume until `synced`, one may come
    /// (`syncing`); once a keyed value of it has (`inSnapshot`), the newest position among its
    /// values waits for `synced` to become the subscription's: a position in the middle of a
    /// snapshot resumes nothing (the keys not read yet would be missing).
    private var syncing = false
    private(set) var inSnapshot = false
    private var snapshotPosition: (text: String, sequence: Int)?
    /// A map subscription's table (`RunnelClient.subscribeMap`); nil for a plain subscription.
    var table: MapTable?

    private var count: Int { events.count - head }

    var hasEnded: Bool { ended }
    /// The error that ended the subscription, once it has ended.
    var endError: RunnelError? { error }

    /// The next event, the end, or nil when the consumer must wait.
    mutating func take() -> Taken? {
        if head < events.count {
            let event = events[head]
            head += 1
            if head == events.count {
                events.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 1024 && head * 2 >= events.count {
                events.removeFirst(head)
                head = 0
            }
            let madeRoom = readerWaits
            readerWaits = false
            return .event(event, madeRoom: madeRoom)
        }
        if overflowed > 0 { return .event(.gap(takeOverflow()), madeRoom: false) }
        if ended { return .end(error) }
        return nil
    }

    /// Buffers `event` (a value past `capacity` is counted as dropped instead); returns whether
    /// a consumer waits, to be woken (`wake`).
    mutating func put(_ event: MapEvent, capacity: Int) -> Bool {
        guard !ended else { return false }
        if event.isChange, count >= capacity {
            overflowed += 1
        } else {
            if overflowed > 0 { events.append(.gap(takeOverflow())) }
            events.append(event)
        }
        return waiter != nil
    }

    /// The consumer waiting, with what to give it, when there is something.
    mutating func wake() -> (CheckedContinuation<Taken, Never>, Taken)? {
        guard let waiting = waiter, let taken = take() else { return nil }
        waiter = nil
        return (waiting, taken)
    }

    /// Whether the reader must wait for the consumer; if so it is noted as waiting.
    mutating func mustWaitForRoom(capacity: Int) -> Bool {
        readerWaits = !ended && count >= capacity
        return readerWaits
    }

    /// Marks the end; returns whether it had not ended yet, the consumer waiting with what to give
    /// it (what is still buffered comes first), and whether the reader thread waits for room.
    mutating func end(_ error: RunnelError?, dropBuffered: Bool) -> (
        Bool, (CheckedContinuation<Taken, Never>, Taken)?, Bool
    ) {
        guard !ended else { return (false, nil, false) }
        ended = true
        self.error = error
        if dropBuffered {
            events.removeAll()
            head = 0
            overflowed = 0
        }
        let madeRoom = readerWaits
        readerWaits = false
        return (true, wake(), madeRoom)
    }

    /// The server answered a `sub` (`resumed`, for one subject): a map's snapshot may come.
    mutating func answered(resumed: Bool, pattern: Bool) {
        syncing = !pattern && !resumed
        inSnapshot = false
        snapshotPosition = nil
        table?.answered(resumed: resumed)
    }

    /// Notes the position of an event about to be delivered (a map snapshot's apart, until
    /// `synced`); false for a value to skip: one at or before the last position shown, after a
    /// resubscription that could not resume (a keyed value never is: a snapshot is the table).
    mutating func seen(_ subject: String, position text: String?, keyed: Bool) -> Bool {
        if keyed && syncing {
            inSnapshot = true
            if let text, let position = Position(text),
                snapshotPosition.map({ position.sequence > $0.sequence }) ?? true
            {
                snapshotPosition = (text, position.sequence)
            }
            return true
        }
        guard let text else { return true }
        if !keyed, let last = skip[subject] {
            if let current = Position(text), current.epoch == last.epoch, current.sequence <= last.sequence {
                return false
            }
            skip[subject] = nil
        }
        positions[subject] = text
        return true
    }

    /// A map's `synced`: after a snapshot, the subscription's position is the snapshot's (the
    /// map's own, `synced`'s `pos`, when it has one; else its newest value's; none for an empty
    /// snapshot).
    mutating func synced(_ subject: String, position: String?) {
        if syncing {
            positions[subject] = position ?? snapshotPosition?.text
            skip[subject] = nil
        }
        syncing = false
        inSnapshot = false
        snapshotPosition = nil
    }

    private mutating func takeOverflow() -> Gap {
        defer { overflowed = 0 }
        return Gap(.overflow, count: overflowed)
    }
}

/// A position, `EPOCH:SEQ`, split for comparing two of the same epoch.
///
/// Thread rules: a value. Lifetime rule: none.
struct Position {
    let epoch: Substring
    let sequence: Int

    init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":"), let sequence = Int(text[text.index(after: colon)...]) else {
            return nil
        }
        epoch = text[..<colon]
        self.sequence = sequence
    }
}

extension MapEvent {
    /// A write or a removal: what a full buffer drops (and counts), unlike `synced` and gaps.
    var isChange: Bool {
        switch self {
        case .value, .removed: true
        case .synced, .gap: false
        }
    }
}
