/// Another loop's publishers, as this loop's lagging subscribers hold them (decision 0011): a
/// stand-in gate for each number that loop gave (`PublisherRegistry`), whose first laggard
/// and last (or pacer: `PublisherHold`) tell that loop to pause and resume the publisher
/// (`tell`). Values from there are
/// delivered, or published, inside the stand-in's `publishing`, so `Session+SlowConsumer`
/// holds it as it holds a gate of this loop. A stand-in no laggard holds may be let go at any
/// time: each one counts its own laggards there, so two for one number balance out.
///
/// Thread rules: its loop's thread. Lifetime rule: its server's replica parts hold it; the
/// laggards holding a stand-in hold it too.
final class RemotePublishers {
    private var standIns: [UInt64: PublisherGate] = [:]
    private let pauses: PublisherPauses
    /// The publishers' loop when this is the owner's: the stand-ins' `maker`.
    private let maker: ReplicaReader?
    private let tell: (_ number: UInt64, _ hold: PublisherHold, _ began: Bool) -> Void

    /// Stand-ins whose owner is `pauses`' (the loop's: `publishing` marks them current there),
    /// telling the publishers' loop through `tell`; on the owner's loop, `maker` is that loop.
    init(
        pauses: PublisherPauses, maker: ReplicaReader?,
        tell: @escaping (_ number: UInt64, _ hold: PublisherHold, _ began: Bool) -> Void
    ) {
        self.pauses = pauses
        self.maker = maker
        self.tell = tell
    }

    /// The stand-in for the publisher numbered `number` (not 0).
    func gate(_ number: UInt64) -> PublisherGate {
        assert(number != 0, "a stand-in for no publisher")
        if let gate = standIns[number] { return gate }
        if standIns.count >= 256 { standIns = standIns.filter { $0.value.isPaused } }
        let gate = PublisherGate(pauses: pauses)
        gate.maker = maker
        gate.relay = { [tell] hold, began in tell(number, hold, began) }
        standIns[number] = gate
        return gate
    }
}
