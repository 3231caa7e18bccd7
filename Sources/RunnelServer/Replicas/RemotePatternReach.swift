import RunnelProtocol

/// Other loops' pattern subscriptions as the owner counts them for `$sys.occupancy`, and for a
/// `pub`'s receivers until a loop has told its count of a new replica (decision 0011): a
/// stand-in for each, with the pattern and the token's rights (`PatternReader`), indexed by
/// pattern, so a subject's occupancy counts them whether the subject exists or not (a loop holds
/// replicas only of subjects that exist). A reading loop tells the owner of each as it begins
/// and ends (`ReplicaRequest.patternReach`), in its place among the loop's other requests.
///
/// Thread rules: the owner's loop. Lifetime rule: its `ReplicaSource` holds it; it holds each
/// stand-in from the subscription's beginning to its end.
final class RemotePatternReach {
    private final class StandIn: PatternReading {
        let reader: PatternReader
        init(_ reader: PatternReader) { self.reader = reader }
    }

    private let index = PatternIndex<StandIn>()
    /// Each reading loop's stand-ins, by the number it gave the subscription.
    private var byReader: [ObjectIdentifier: [UInt64: StandIn]] = [:]

    /// `reader`'s pattern subscription numbered `id` began, reading what `pattern` says.
    func began(_ id: UInt64, of reader: ReplicaReader, reading pattern: PatternReader) {
        let standIn = StandIn(pattern)
        byReader[ObjectIdentifier(reader), default: [:]][id] = standIn
        index.insert(standIn, for: pattern.pattern)
    }

    /// `reader`'s pattern subscription numbered `id` ended: its pattern, nil when unknown.
    func ended(_ id: UInt64, of reader: ReplicaReader) -> SubjectPattern? {
        guard let standIn = byReader[ObjectIdentifier(reader)]?.removeValue(forKey: id) else { return nil }
        index.remove(standIn, for: standIn.reader.pattern)
        return standIn.reader.pattern
    }

    /// How many of the other loops' pattern subscriptions a value of `name` would reach.
    func reach(of name: String) -> Int { index.reach(of: name, named: 0) }

    /// How many of `reader`'s pattern subscriptions a value of `name` would reach.
    func reach(of name: String, by reader: ReplicaReader) -> Int {
        guard let standIns = byReader[ObjectIdentifier(reader)] else { return 0 }
        return standIns.values.reduce(0) { reach, standIn in
            standIn.reader.pattern.matches(name) && standIn.reader.receives(name) ? reach + 1 : reach
        }
    }
}
