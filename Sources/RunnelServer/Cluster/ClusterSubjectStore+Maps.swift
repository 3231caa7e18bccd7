import Runnel
import RunnelBytes
import RunnelJSON
import RunnelProtocol

/// Maps in a cluster (version 1.3). A map's stream keeps the latest changes of each key
/// (`ClusterLink.mapHistory`), each key on a NATS subject of its own under the map's
/// (`…r.EPOCH.KEY`, the key escaped by `NATSTokenEscaping`): a write's payload is its value, a
/// removal's the word `deleted` or `expired` (never a JSON value). Every node applies the
/// stream's changes in its order, with its seqs as the map's, so every node holds the same keys
/// and delivers the same changes in one order, and a position given by one resumes on any other.
///
/// - A removal is stored only over the key's change it removes (`expectingLast`): one that
///   another change of the key reached first is not stored (it came before that change), so a
///   node that reads the stream later, which holds only each key's latest changes, rebuilds
///   the same keys.
/// - A node that starts reads what the stream holds: the seqs skip what it no longer holds,
///   and `from` resumes there only after the last skip (`MapValues.forgetChanges`). A node
///   whose consumer fell behind by more than a key's history skips the same way, and its
///   subscribers get `dropped` with the count (the changes after it are each key's latest, so
///   their tables stay true).
/// - `ttl_s`: each node's sweep finds the keys due; the first live node (`ClusterPeers.rank`)
///   asks the cluster to expire them at once, the next ones `expiryStagger` later each, so
///   keys still expire when the first node has died. An expiry is a removal: two nodes
///   expiring one key store it once.
/// - `max_keys` is checked by the node that takes the `pub`, against the keys it holds: new
///   keys written at the same moment on two nodes may pass it together.
///
/// Loop thread only.
extension ClusterSubjectStore {
    /// How much later than the node before it each node expires a key (by `ClusterPeers.rank`).
    static let expiryStagger: Int64 = 2_000

    package func createMap(_ name: String, ttlMilliseconds: Int64?, maxKeys: Int, durable: Bool) -> SubjectEntry {
        definitionSync.create(
            name,
            ClusterDefinition(
                kind: .map, capacity: nil, retainMilliseconds: ttlMilliseconds, maxKeys: maxKeys, durable: durable,
                initial: nil, epoch: Epoch.make()))
    }

    package func publish(
        _ value: RawJSON, members: JSONMemberIndex, key: String, to entry: SubjectEntry,
        bounding bound: PublishEvaluationBound
    ) {
        if publishToStream(value.buffer, on: subject(of: key, in: entry), of: entry) { entry.published &+= 1 }
    }

    package func remove(_ key: String, from entry: SubjectEntry, bounding bound: PublishEvaluationBound) -> Bool {
        guard let live = entry.map?.keys[key] else { return false }
        publishToStream(Self.deleted, on: subject(of: key, in: entry), of: entry, expectingLast: live.message.seq)
        return true
    }

    /// A change of the map in `epoch`'s stream, to `key` (escaped): applied with the stream's
    /// seq, once.
    func deliverMapChange(_ message: NATSStreamMessage, epoch: String, key escaped: Substring) {
        guard let entry = streams.entry(epoch), let map = entry.map, let publishBound,
            message.streamSeq > entry.lastSeq
        else { return }
        if message.streamSeq > entry.lastSeq + 1 {
            // What the stream no longer holds between them is not known here.
            entry.forgetChanges(of: map, through: message.streamSeq - 1)
            if entry.lastSeq > 0 { missed(message.streamSeq - entry.lastSeq - 1, in: entry.name) }
        }
        if !entry.isTerminated, let key = NATSTokenEscaping.unescape(escaped, keepingDots: false),
            (try? MapKey.check(key)) != nil
        {
            publishBound.beginPublish()
            if let mark = Self.removal(message.payload) {
                if !entry.remove(key, mark, seq: { message.streamSeq }, time: message.time) {
                    entry.recordRemoval(of: key, mark, seq: message.streamSeq, time: message.time)
                }
            } else if let value = validated(message.payload[...]) {
                entry.write(value, members: JSONMemberIndex(), key: key, seq: message.streamSeq, time: message.time)
            }
            publishBound.endPublish()
        }
        consumed(message.streamSeq, of: entry)
    }

    /// Has the cluster expire `entry`'s keys that are due at `now`, by this node's rank (the
    /// sweep's work for a map in a cluster: `MapValues.expiresElsewhere`).
    func expireKeys(of entry: SubjectEntry, now: Int64) {
        guard let map = entry.map, link.isUp, !definitionSync.awaitsStream(of: entry.epoch) else { return }
        for key in map.expired(now: now - Int64(link.peers.rank) * Self.expiryStagger) {
            let expiry = MapExpiry(epoch: entry.epoch, key: key.label.key!, seq: key.message.seq!)
            guard let number = expiries.ask(expiry) else { continue }
            link.retainedPublisher.publish(
                Self.expired, on: subject(of: expiry.key, in: entry), id: "\(link.instance)-x\(number)",
                expectingLast: expiry.seq, resendWithin: NATSJetStream.resendWindow(maxAgeMilliseconds: nil))
        }
    }

    /// JetStream answered the expiry numbered `number`: stored, not (the key changed
    /// meanwhile), or failed, when the next sweep asks again.
    func expiryAnswered(_ number: UInt64?, _ answer: NATSPublishAnswer) {
        guard let number, expiries.answered(number) else { return }
        if case .failed(let problem) = answer {
            link.logger.warning("cluster: expiring a key of a map failed (tried again): \(problem)")
        }
    }

    /// Has the sweep's work on `entry`, a map under `ttl_s`, done by the cluster.
    func expireInCluster(_ entry: SubjectEntry) {
        entry.map?.expiresElsewhere = { [unowned self, unowned entry] now in expireKeys(of: entry, now: now) }
    }

    /// The NATS subject of `key` in `entry`'s stream.
    private func subject(of key: String, in entry: SubjectEntry) -> String {
        link.streamSubject(epoch: entry.epoch) + "." + NATSTokenEscaping.escape(key, keepingDots: false)
    }

    private static let deleted = ByteBuffer(Array("deleted".utf8))
    private static let expired = ByteBuffer(Array("expired".utf8))

    /// The removal a change's payload says, nil for a write.
    private static func removal(_ payload: [UInt8]) -> Message.Mark? {
        if payload.elementsEqual("deleted".utf8) { return .deleted }
        if payload.elementsEqual("expired".utf8) { return .expired }
        return nil
    }
}

/// A key's expiry asked of the cluster: the map's epoch, the key, and the seq of the change
/// it removes. Thread rules: a value.
struct MapExpiry: Hashable {
    let epoch: String
    let key: String
    let seq: UInt64
}

/// The expiries this node asked the cluster for and has not heard back about, by the number in
/// their publishes' ids: each asked once until answered (a sweep meanwhile finds the key due
/// again). Thread rules: a value, owned by the clustered node's store on the first loop.
struct MapExpiries {
    private var byNumber: [UInt64: MapExpiry] = [:]
    private var asked: Set<MapExpiry> = []
    private var lastNumber: UInt64 = 0

    /// `expiry`'s number, to publish it under; nil when it was asked and is not answered yet.
    mutating func ask(_ expiry: MapExpiry) -> UInt64? {
        guard asked.insert(expiry).inserted else { return nil }
        lastNumber += 1
        byNumber[lastNumber] = expiry
        return lastNumber
    }

    /// The expiry numbered `number` was answered (it may be asked again); false when no such
    /// one waits.
    mutating func answered(_ number: UInt64) -> Bool {
        guard let expiry = byNumber.removeValue(forKey: number) else { return false }
        asked.remove(expiry)
        return true
    }
}
