/// This loop's publishers as other loops name them (decision 0011): a value that crosses to
/// another loop, and a `pub` forwarded to the owner, carry its publisher's number, so that a
/// subscriber lagging there can pause the publisher here, and a loop behind on its values pace
/// it (`hold(_:_:began:)`, from `ReplicaRequest.hold` or `ReplicaUpdate.hold`). A gate keeps
/// its number for life; numbers are never used twice; a gate that has gone is forgotten.
///
/// Thread rules: its loop's thread. Lifetime rule: its server's `ReplicaSource` or
/// `SubjectReplicas` holds it; it holds the gates weakly.
final class PublisherRegistry {
    private struct Entry {
        weak var gate: PublisherGate?
    }

    private var gates: [UInt64: Entry] = [:]
    private var lastNumber: UInt64 = 0
    /// How many gates were alive at the last sweep of the gone ones.
    private var liveAtSweep = 0

    /// `gate`'s number; 0 for none (a value no publisher sent: nobody to pause).
    func number(of gate: PublisherGate?) -> UInt64 {
        guard let gate else { return 0 }
        if gate.remoteNumber != 0 { return gate.remoteNumber }
        lastNumber += 1
        gate.remoteNumber = lastNumber
        gates[lastNumber] = Entry(gate: gate)
        if gates.count > 2 * max(liveAtSweep, 64) {
            gates = gates.filter { $0.value.gate != nil }
            liveAtSweep = gates.count
        }
        return lastNumber
    }

    /// The number of the publisher `pauses` names now (`PublisherPauses.current`), 0 for none,
    /// and the loop that made the bytes of what it publishes (`PublisherGate.maker`: a
    /// reading loop's session's, published by the owner; nil for this loop's own), which the
    /// gate holds. Reads a known gate without retaining it (the gate is side-tabled: the
    /// registry holds it weakly, so each of its reference counts takes the slow path), nor its
    /// maker.
    func origin(of pauses: PublisherPauses) -> (number: UInt64, maker: Unmanaged<ReplicaReader>?) {
        guard let current = pauses.currentGate else { return (0, nil) }
        let (known, maker) = current._withUnsafeGuaranteedRef { gate in
            (gate.remoteNumber, gate.maker.map { Unmanaged.passUnretained($0) })
        }
        return (known != 0 ? known : number(of: current.takeUnretainedValue()), maker)
    }

    /// A subscriber on another loop began to lag behind (`began`) the values of the publisher
    /// numbered `number`, or stopped, or a loop began or stopped pacing it (`hold`): it holds
    /// the gate as one here would. Nothing for a publisher that has gone.
    func hold(_ number: UInt64, _ hold: PublisherHold, began: Bool) {
        gates[number]?.gate?.take(hold, began: began)
    }
}
