/// A run of elements that a `LoopOutbox`'s batch ends with, gathered in an array of its own:
/// `key` (a feed, a ticket) and `head` say what they belong to, and `make` turns the run into
/// one message when another message is posted after it or the batch goes. Adding to it is an
/// array's append, where growing an enum's payload in place in the batch copies the payload
/// out and destroys two messages each time (bench/README.md, "Crossings between loops").
///
/// Thread rules: the outbox's loop. Lifetime rule: its owner holds it and the outbox; the
/// outbox holds it while it may close it.
public final class OutboxRun<Message, Head, Element> {
    private unowned let outbox: LoopOutbox<Message>
    private let make: (UInt64, Head, [Element]) -> Message
    /// The open run's; nil when the batch does not end with one.
    private var head: Head?
    private var key: UInt64 = 0
    private var elements: [Element] = []

    /// A run at the end of `outbox`'s batches, each closed into one message by `make`. An
    /// outbox has one run at most.
    public init(of outbox: LoopOutbox<Message>, make: @escaping (UInt64, Head, [Element]) -> Message) {
        precondition(outbox.closeRun == nil, "an outbox with two runs")
        self.outbox = outbox
        self.make = make
        outbox.closeRun = { [self] in close() }
    }

    /// Whether the batch ends with `key`'s run.
    @inline(__always)
    public func isOpen(_ key: UInt64) -> Bool { self.key == key && head != nil }

    /// Whether the batch ends with `key`'s run, and its head is one `isSame` accepts.
    @inline(__always)
    public func isOpen(_ key: UInt64, with isSame: (Head) -> Bool) -> Bool {
        guard self.key == key, let head else { return false }
        return isSame(head)
    }

    /// Starts a run of `key`'s with `element` at the batch's end, after what is there (an open
    /// run closed first).
    public func start(_ key: UInt64, _ head: Head, with element: Element) {
        outbox.loop.assertOnLoopThread()
        if let run = close() { outbox.post(run) }
        self.key = key
        self.head = head
        elements.append(element)
        outbox.askForTurnEnd()
    }

    /// Adds `element` to the open run.
    @inline(__always)
    public func append(_ element: Element) {
        assert(head != nil, "no run to add to")
        elements.append(element)
    }

    /// The open run as one message, and no run open; nil when none is.
    fileprivate func close() -> Message? {
        guard let head else { return nil }
        self.head = nil
        let run = elements
        // The next run is likely as long: no growing it element by element.
        elements = []
        elements.reserveCapacity(run.count)
        return make(key, head, run)
    }
}
