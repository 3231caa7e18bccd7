import Runnel
import RunnelJSON

/// The subject store of a clustered node (docs/protocol.md, "Clusters"): the node's own store
/// (`local`, in memory or with its journal) for everything it keeps, and its `ClusterLink` for
/// what it shares. A plain subject's value published here goes to the local subscribers and,
/// once, to the cluster; a value another node sent reaches the local subscribers of its
/// subject and of the patterns that match it (`ClusterInterest` keeps the NATS subscriptions
/// those need), the subject made here as a plain one when it does not exist yet.
///
/// Missed values are told, never silent: a gap in an origin's sequence for a subject is a
/// `dropped` event with its count for the subscriptions it reaches; a lost link, or values
/// cnats dropped, is a `dropped` event without a count for every subscription values from
/// other nodes reach.
///
/// What needs the cluster (creating, ending or deleting a subject, a retained subject's
/// values, a `sub` with `from`) is refused with `unavailable` while the link is down
/// (`checkShared`), and changes nothing.
///
/// Thread rules: loop thread only. Lifetime rule: the server holds it for its life; it holds
/// the local store and the link.
final class ClusterSubjectStore: SubjectStore, ClusterReceiver, @unchecked Sendable {
    private let local: any SubjectStore
    let link: ClusterLink
    let interest: ClusterInterest
    /// The last seq of each origin's values, by subject, with the subject's epoch there: a jump
    /// is values missed, a seq not above it a second copy.
    private var lastSeqs: [String: [String: (epoch: String, seq: UInt64)]] = [:]
    /// Values of other nodes this node knows it missed.
    private(set) var valuesMissed: UInt64 = 0
    /// `max_subjects` and `max_depth`, which values from other nodes respect too, and the
    /// bound their fan-out's evaluations are held to: the server's (`Server.applyRetentionLimits`).
    private var maxSubjects = Int.max
    private var maxDepth = 1
    private var publishBound: PublishEvaluationBound?

    init(local: any SubjectStore, link: ClusterLink) {
        self.local = local
        self.link = link
        interest = ClusterInterest(subscribe: { [link] subject in link.subscribe(subject) })
        link.receiver = self
    }

    /// Takes the server's limits and publish bound (at start and on every reload).
    func apply(maxSubjects: Int, maxDepth: Int, publishBound: PublishEvaluationBound) {
        self.maxSubjects = maxSubjects
        self.maxDepth = maxDepth
        self.publishBound = publishBound
    }

    /// `unavailable` while the link to NATS is down.
    func checkShared() throws(ProtocolError) {
        guard link.isUp else {
            throw ProtocolError(
                .unavailable, "this node's link to the cluster (NATS) is down; try again or another node")
        }
    }

    var figures: ClusterFigures {
        ClusterFigures(
            name: link.config.name, node: link.config.nodeName, linkUp: link.isUp, nodes: link.nodes,
            valuesSent: link.valuesSent, valuesReceived: link.valuesReceived, valuesMissed: valuesMissed,
            linkLosses: link.linkLosses)
    }

    // MARK: SubjectStore

    var count: Int { local.count }
    subscript(name: String) -> SubjectEntry? { local[name] }
    func list(prefix: String) -> [SubjectEntry] { local.list(prefix: prefix) }
    var keepsDurableSubjects: Bool { local.keepsDurableSubjects }
    var repliesWaitForDisk: Bool { local.repliesWaitForDisk }
    func checkDurableWrites() throws(ProtocolError) { try local.checkDurableWrites() }
    var retained: RetainedValues { local.retained }
    var journalStatistics: JournalStatistics? { local.journalStatistics }
    func whenWritten(_ action: @escaping (ProtocolError?) -> Void) { local.whenWritten(action) }
    func terminate(_ entry: SubjectEntry, error: ProtocolError?) { local.terminate(entry, error: error) }
    func delete(_ entry: SubjectEntry) { local.delete(entry) }
    func patternSignal(_ pattern: SubjectPattern, admitting: (@Sendable (String) -> Bool)?) -> Signal<Message> {
        local.patternSignal(pattern, admitting: admitting)
    }

    func create(_ name: String, kind: SubjectKind, capacity: Int?, initial: RawJSON?, durable: Bool) -> SubjectEntry {
        local.create(name, kind: kind, capacity: capacity, initial: initial, durable: durable)
    }

    func publish(
        _ value: RawJSON, members: JSONMemberIndex, to entry: SubjectEntry, bounding bound: PublishEvaluationBound
    ) {
        if entry.kind == .subject {
            entry.clusterSeq &+= 1
            withExtendedLifetime(value) {
                link.send(value.buffer.bytes, subject: entry.name, epoch: entry.epoch, seq: entry.clusterSeq)
            }
        }
        local.publish(value, members: members, to: entry, bounding: bound)
    }

    func close() {
        link.close()
        local.close()
    }

    // MARK: ClusterReceiver

    func clusterDelivered(_ payload: [UInt8], subject: String, origin: String, epoch: String, seq: UInt64) {
        guard isNew(seq, epoch: epoch, of: origin, in: subject) else { return }
        guard let publishBound, let entry = localSubject(subject) else { return }
        let value: RawJSON
        do {
            value = try payload.withUnsafeBytes { bytes throws(JSONError) in
                try RawJSON(validating: bytes, maxDepth: maxDepth)
            }
        } catch {
            // Not a value a node sent: something else publishes under the cluster's prefix.
            interest.noteMissed(1, in: subject)
            valuesMissed &+= 1
            return
        }
        local.publish(value, members: JSONMemberIndex(), to: entry, bounding: publishBound)
    }

    /// The plain subject `name` to deliver another node's value to: made here when it does
    /// not exist (within `max_subjects`); nil when a subject of that name here keeps values
    /// or has ended, which a plain subject of another node cannot change.
    private func localSubject(_ name: String) -> SubjectEntry? {
        if let entry = local[name] {
            return entry.kind == .subject && entry.acceptsValues ? entry : nil
        }
        guard SubjectName.isValidName(name), local.count < maxSubjects else {
            interest.noteMissed(1, in: name)
            valuesMissed &+= 1
            return nil
        }
        return local.create(name, kind: .subject, capacity: nil, initial: nil, durable: false)
    }

    /// Whether the value `seq` of `origin` in `subject` (in its epoch `epoch` there) is new: false
    /// for a second copy (NATS delivers one per matching subscription). The values between the
    /// last one and a new one were missed. A new epoch is the subject made anew there.
    private func isNew(_ seq: UInt64, epoch: String, of origin: String, in subject: String) -> Bool {
        let last = lastSeqs[origin, default: [:]][subject]
        if let last, last.epoch == epoch {
            guard seq > last.seq else { return false }
            if seq > last.seq + 1 {
                interest.noteMissed(seq - last.seq - 1, in: subject)
                valuesMissed &+= seq - last.seq - 1
            }
        }
        lastSeqs[origin, default: [:]][subject] = (epoch, seq)
        return true
    }

    func clusterForgot(_ origins: [String]) {
        for origin in origins { lastSeqs[origin] = nil }
    }

    func clusterLinkChanged(up: Bool) {
        // Whatever other nodes sent while the link was down may be lost.
        if up { interest.noteMissedEverywhere() }
    }

    func clusterReportedLoss() { interest.noteMissedEverywhere() }
}
