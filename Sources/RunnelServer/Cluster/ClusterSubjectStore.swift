import Runnel
import RunnelJSON
import RunnelProtocol

/// The subject store of a clustered node (docs/protocol.md, "Clusters"): the node's subjects in
/// memory (`local`), mirroring the cluster's, and its `ClusterLink` for what it shares.
///
/// - **Definitions** (`ClusterDefinitionSync`, the store's `definitionSync`): creating, ending
///   and deleting a subject is written to the cluster's key-value bucket, and every node
///   follows the bucket's changes, making, ending and deleting its own entries in the epochs
///   the definitions name.
/// - **Plain subjects' values**: published here, a value goes to the local subscribers and,
///   once, to the cluster over core NATS; a value another node sent reaches the local
///   subscribers of its subject and of the patterns that match it (`ClusterInterest` keeps the
///   NATS subscriptions those need). A gap in an origin's sequence is a `dropped` event with
///   its count; a lost link, or values cnats dropped, a `dropped` event without one.
/// - **Retained subjects' values** (`+Retained`): published here, a value goes to the subject's
///   JetStream stream only; every node delivers the stream's values, in the stream's order, so
///   one order holds everywhere, and the stream's sequence numbers are the positions.
///
/// What needs the cluster is refused with `unavailable` while the link is down (`checkShared`).
/// Replies about definitions and retained values wait for the cluster's answer (`whenWritten`,
/// `ClusterChanges`).
///
/// Thread rules: loop thread only. Lifetime rule: the server holds it for its life; it holds
/// the local store, the link and its definitions' sync.
package final class ClusterSubjectStore: SubjectStore, ClusterReceiver, ClusterDefinitionHost, @unchecked Sendable {
    package let local: MemorySubjectStore
    let link: ClusterLink
    let interest: ClusterInterest
    /// Its subjects' definitions in the cluster's bucket (made at first use, in `init`: it
    /// holds this store).
    private(set) lazy var definitionSync = ClusterDefinitionSync(local: local, link: link, host: self)
    /// Changes asked of the cluster and not yet answered.
    var changes = ClusterChanges()
    /// The retained subjects' streams this node consumes, and what waits on them.
    var streams = ClusterStreams<NATSSubscription>()
    /// What waits for `hasCaughtUp` (`whenCaughtUp`).
    var caughtUpWaiters: [() -> Void] = []
    /// The epoch of each change published to a stream and not answered by JetStream yet.
    var storing: [UInt64: String] = [:]
    /// Maps' expiries this node asked the cluster for (`ClusterSubjectStore+Maps`).
    var expiries = MapExpiries()
    /// The last seq of each origin's plain values, by subject.
    private var sequences = ClusterSequences()
    /// Told when the link goes down or comes back (`SharedSubjects.linkChanged`).
    package var linkChanged: (Bool) -> Void = { _ in }
    /// Values of other nodes this node knows it missed.
    private(set) var valuesMissed: UInt64 = 0
    /// `max_subjects` and `max_depth`, which values from other nodes respect too, and the
    /// bound their fan-out's evaluations are held to: the server's (`Server.applyRetentionLimits`).
    private(set) var maxSubjects = Int.max
    private(set) var maxDepth = 1
    private(set) var publishBound: PublishEvaluationBound?

    /// Takes the cluster's definitions as they are now (each key read: blocks, before the loop
    /// runs) into a new local store, whose retained subjects then fill from their streams.
    package init(link: ClusterLink, retained: RetainedValues) throws(NATSError) {
        self.local = MemorySubjectStore(retained: retained)
        self.link = link
        interest = ClusterInterest(
            subscribe: { [link] subject in link.subscribe(subject) },
            unsubscribe: { [link] subject in link.unsubscribe(subject) })
        link.receiver = self
        interest.subscribed = { [unowned self] key in forgetSeqs(newlyBroughtBy: key) }
        try definitionSync.loadDefinitions()
    }

    /// `unavailable` while the link to NATS is down.
    package func checkShared() throws(ProtocolError) {
        guard link.isUp else { throw SharedLink.down }
    }

    /// Takes the server's limits and publish bound (at start and on every reload).
    package func apply(maxSubjects: Int, maxDepth: Int, publishBound: PublishEvaluationBound) {
        self.maxSubjects = maxSubjects
        self.maxDepth = maxDepth
        self.publishBound = publishBound
    }

    var figures: ClusterFigures {
        ClusterFigures(
            name: link.config.name, node: link.config.nodeName, linkUp: link.isUp, nodes: link.nodes,
            valuesSent: link.valuesSent, valuesNotSent: link.valuesNotSent, valuesReceived: link.valuesReceived,
            valuesMissed: valuesMissed, linkLosses: link.linkLosses)
    }

    // MARK: SubjectStore

    package var count: Int { local.count }
    package subscript(name: String) -> SubjectEntry? { local[name] }
    package func list(prefix: String) -> [SubjectEntry] { local.list(prefix: prefix) }
    /// Durable subjects are JetStream's files.
    package let keepsDurableSubjects = true
    package let repliesWaitForDisk = true
    package func checkDurableWrites() throws(ProtocolError) {}
    package var retained: RetainedValues { local.retained }
    package let journalStatistics: JournalStatistics? = nil
    package func repliesWait(forChangeOf entry: SubjectEntry) -> Bool { true }
    package func repliesWait(forValueOf entry: SubjectEntry) -> Bool { entry.retainsValues }
    package func patternSignal(_ pattern: SubjectPattern, admitting: (@Sendable (String) -> Bool)?) -> Signal<Message> {
        local.patternSignal(pattern, admitting: admitting)
    }

    /// Made here and in the cluster, in a new epoch (`ClusterDefinitionSync.create`).
    package func create(
        _ name: String, kind: SubjectKind, capacity: Int?, retainMilliseconds: Int64?, initial: RawJSON?, durable: Bool
    ) -> SubjectEntry {
        definitionSync.create(
            name,
            ClusterDefinition(
                kind: kind, capacity: kind == .replay ? capacity : nil, retainMilliseconds: retainMilliseconds,
                durable: durable, initial: initial, epoch: Epoch.make()))
    }

    package func terminate(_ entry: SubjectEntry, error: ProtocolError?) {
        definitionSync.terminate(entry, error: error)
    }
    package func delete(_ entry: SubjectEntry) { definitionSync.delete(entry) }

    package func whenWritten(_ action: @escaping (ProtocolError?) -> Void) {
        if let now = changes.whenAnswered(action) { now() }
    }

    /// A NATS subscription was just made for a `sub` (`ClusterInterest.began`): its reply waits
    /// until NATS has read it and every other node has applied its announcement
    /// (`ClusterPeers.whenKnown`), so a value another node publishes after the reply reaches it.
    /// While the link is down the reply does not wait (the subscription is made again when it
    /// is back, and what was missed meanwhile is told with `dropped`).
    package func awaitNewInterest() {
        let change = changes.begin()
        guard link.isUp else { return answer(change, error: nil) }
        let link = link
        let announcement = link.peers.lastAnnouncement
        link.flush { [self] in
            link.peers.whenKnown(announcement) { [self] in answer(change, error: nil) }
        }
    }

    func beginChange() -> UInt64 { changes.begin() }

    /// Change `number` was answered: the replies waiting for it go out.
    func answer(_ number: UInt64, error: ProtocolError?) {
        for reply in changes.answer(number, error: error) { reply() }
    }

    package func publish(
        _ value: RawJSON, members: JSONMemberIndex, to entry: SubjectEntry, bounding bound: PublishEvaluationBound
    ) {
        guard !entry.retainsValues else { return publishRetained(value, to: entry) }
        let route = route(of: entry)
        let peersVersion = link.peers.version
        if route.peersVersion != peersVersion {
            // What other nodes want changed since this subject's last value: asked again.
            route.peersVersion = peersVersion
            route.isWanted = link.peers.wants(entry.name)
        }
        // Every value takes the next number, sent or not: one a node that wanted it did not
        // get (given up for silence meanwhile, or thought not to want it) is a gap there.
        route.published &+= 1
        if route.isWanted { link.send(value.buffer, route: route, seq: route.published) }
        local.publish(value, members: members, to: entry, bounding: bound)
    }

    /// How the plain subject `entry`'s values are sent: kept on the entry, made at its first value.
    private func route(of entry: SubjectEntry) -> ClusterRoute {
        if let route = entry.sharingState { return unsafeDowncast(route, to: ClusterRoute.self) }
        let route = link.route(of: entry.name, epoch: entry.epoch)
        entry.sharingState = route
        return route
    }

    package func close() {
        link.close()
        local.close()
    }

    // MARK: Plain subjects' values from other nodes

    func clusterDelivered(_ values: ClusterValueBatch, subject: String, origin: String, epoch: String, first: UInt64) {
        let (seen, gap) = sequences.receive(
            first: first, count: values.count, epoch: epoch, origin: origin, subject: subject)
        if gap > 0 { missed(gap, in: subject) }
        guard seen < values.count, let publishBound, let entry = localPlainSubject(subject) else { return }
        for payload in values.dropFirst(seen) {
            guard let value = validated(payload) else {
                // Not a value a node sent: something else publishes under the cluster's prefix.
                missed(1, in: subject)
                continue
            }
            local.publish(value, members: JSONMemberIndex(), to: entry, bounding: publishBound)
        }
    }

    /// `payload` as a JSON value within `max_depth`; nil when it is not one.
    func validated(_ payload: ArraySlice<UInt8>) -> RawJSON? {
        try? payload.withUnsafeBytes { bytes throws(JSONError) in try RawJSON(validating: bytes, maxDepth: maxDepth) }
    }

    /// The plain subject `name` to deliver another node's value to: made here when it does
    /// not exist (within `max_subjects`; its definition comes from the bucket too); nil when a
    /// subject of that name here keeps values or has ended.
    private func localPlainSubject(_ name: String) -> SubjectEntry? {
        if let entry = local[name] {
            return entry.kind == .subject && entry.acceptsValues ? entry : nil
        }
        guard SubjectName.isValidName(name), local.count < maxSubjects else {
            missed(1, in: name)
            return nil
        }
        return local.create(
            name, kind: .subject, capacity: nil, retainMilliseconds: nil, initial: nil, durable: false)
    }

    /// `count` values of `subject` did not reach this node: counted, and its subscriptions told.
    func missed(_ count: UInt64, in subject: String) {
        interest.noteMissed(count, in: subject)
        valuesMissed &+= count
    }

    func clusterForgot(_ origins: [String]) {
        sequences.forget(origins: origins)
    }

    var clusterInterestKeys: [String] { interest.keys }

    /// A NATS subscription to `key` was just made: the last seqs of the subjects no other one
    /// brings go, as values sent to other nodes meanwhile were not missed here.
    private func forgetSeqs(newlyBroughtBy key: String) {
        let pattern = SubjectPattern(key)
        sequences.forget { subject in pattern.matches(subject) && !interest.bringsValues(of: subject, besides: key) }
    }

    func clusterLinkChanged(up: Bool) {
        linkChanged(up)
        guard up else { return }
        // Whatever other nodes sent while the link was down may be lost.
        interest.noteMissedEverywhere()
        // A nats-server that restarted has no streams kept in memory.
        for entry in streams.entries where !entry.isDurable { definitionSync.renewIfLost(entry) }
    }

    func clusterReportedLoss() { interest.noteMissedEverywhere() }

    func clusterStreamDelivered(_ message: NATSStreamMessage) {
        if message.subject.hasPrefix(link.streamPrefix) {
            deliverRetained(message)
        } else if message.subject.hasPrefix(link.definitionsPrefix) {
            definitionSync.definitionChanged(message)
        }
    }
}
