import Logging
import Runnel
import RunnelProtocol

/// The cluster's other nodes as this one knows them, and which plain values they want from it
/// (docs/protocol.md, "Clusters"; docs/architecture.md, "A cluster").
///
/// A node sends a plain value to NATS only while another node holds a NATS subscription its
/// subject matches (`wants`), so a node whose subscribers are all its own sends nothing. Two
/// rules keep the contract's promise that a value published anywhere after a `sub` reply
/// reaches it:
/// - a node that makes a NATS subscription announces it, and its `sub` reply waits until every
///   other node has applied the announcement and said so (`whenKnown`): either by
///   acknowledging it or a later one (a node applies one node's messages in the order sent),
///   or by acknowledging the whole set it got on meeting this node; a node silent past
///   `ackWait` is not waited for longer (logged);
/// - a node sends every value while it may not know every other node's subscriptions
///   (`isJoined` false): from its link's coming up until it has heard every live node
///   (`joinAfter`, more than a heartbeat's interval) and holds each one's whole set.
///
/// Messages (each one's reply subject is its sender's instance; keys, names and patterns, are
/// separated by newlines, which no subject name holds):
/// - `runnel.C.nodes`, every `ClusterLink.heartbeatInterval`: `u NAME` (up), `j NAME` (joining:
///   send me your set), `b NAME` (stopping);
/// - `runnel.C.interest`, to every node: `+ID KEY` (a new subscription; acknowledge `ID`),
///   `-KEY` (gone), and this node's whole set when its link comes up;
/// - `runnel.C.to.INSTANCE`, to one node: `aID` (every announcement up to `ID` applied), `?`
///   (I did not know you: send me your set), `?d` (the same, and I had given you up: values
///   may have missed you), and a whole set;
/// - a whole set: `=KEYS` (its first part, replacing what was known), `&KEYS` (more), `!ID`
///   (the end; it holds every announcement up to `ID`: acknowledge `ID`).
///
/// Thread rules: loop thread only. Lifetime rule: owned by its `ClusterLink`.
final class ClusterPeers: @unchecked Sendable {
    /// Where a message goes: every node (`runnel.C.interest`), one node, or the heartbeats.
    enum Destination: Equatable {
        case everyone
        case node(String)
        case heartbeat
    }

    private struct Peer {
        var heard: SchedulerTime
        /// The last of this node's announcements it applied.
        var acknowledged: UInt64 = 0
        var keys: Set<String> = []
        /// Whether a whole set is arriving (`=` came, `!` not yet), and when the last one ended.
        var isReceivingSet = false
        var completeAt: SchedulerTime?
    }

    /// An announced subscription: when it went out, and the replies it holds.
    private struct Announcement {
        let sentAt: SchedulerTime
        var waiters: [() -> Void] = []
        var timerAt: SchedulerTime?
    }

    let instance: String
    private let nodeName: String
    private let scheduler: any Scheduler
    private let logger: Logger
    private let send: (Destination, [UInt8]) -> Void
    /// This node's NATS subscriptions' keys, for its whole set.
    var localKeys: () -> [String] = { [] }
    /// Tells every subscription that other nodes' values reach over NATS that it may have
    /// missed some.
    var missedEverything: () -> Void = {}
    /// Told of each instance met (new, or heard again after it was given up), and of each
    /// given up (silent for `aliveFor`, or said goodbye).
    var met: (String) -> Void = { _ in }
    var lost: (String) -> Void = { _ in }

    private var peers: [String: Peer] = [:]
    /// Instances given up for silence, with when: one heard again is told, and after
    /// `forgetAfter` what is kept about it goes (`tick`).
    private var givenUp: [String: SchedulerTime] = [:]
    /// Those of them told already, as the link came back.
    private var toldGivenUp: Set<String> = []
    /// The keys other nodes want, with how many want each; the patterns among them.
    private var wanted: [String: Int] = [:]
    private var wantedPatterns: [String: SubjectPattern] = [:]
    /// Changes whenever `wants` may answer differently (routes keep their answer by it).
    private(set) var version: UInt64 = 0
    private(set) var isJoined = false
    private var linkUpAt: SchedulerTime
    /// The last announcement's number.
    private(set) var lastAnnouncement: UInt64 = 0
    private var announcements: [UInt64: Announcement] = [:]

    /// How long after its link comes up a node has heard every live node; how long a `sub`
    /// reply waits for another node's acknowledgement; how long a node is alive after it was
    /// heard; how long after that what is kept about it goes.
    static let joinAfter: Duration = ClusterLink.heartbeatInterval + .milliseconds(500)
    static let ackWait: Duration = .seconds(1)
    static let aliveFor: Duration = .seconds(10)
    static let forgetAfter: Duration = .seconds(60)
    /// The most bytes of keys in one message of a whole set.
    static let setPart = 65_536
    /// Added to every timer, so that one firing a little early does not find its time not yet come.
    static let slack: Duration = .milliseconds(10)

    init(
        instance: String, nodeName: String, scheduler: any Scheduler, logger: Logger,
        send: @escaping (Destination, [UInt8]) -> Void
    ) {
        self.instance = instance
        self.nodeName = nodeName
        self.scheduler = scheduler
        self.logger = logger
        self.send = send
        linkUpAt = scheduler.now
    }

    /// Whether another node wants the values of `subject` (or this node cannot yet tell).
    func wants(_ subject: String) -> Bool {
        !isJoined || wanted[subject] != nil || wantedPatterns.values.contains { $0.matches(subject) }
    }

    /// Nodes heard from within `aliveFor`, this one included.
    var nodes: Int { 1 + peers.values.count { isAlive($0) } }

    /// This node's place among the live nodes, ordered by instance: 0 for the first. Work one
    /// node is enough for (a map's expiries) falls to the first, and to the next ones later.
    var rank: Int { peers.count { instance, peer in instance < self.instance && isAlive(peer) } }

    // MARK: This node's side

    /// The link came up (at start, and after every reconnect): every value goes out until this
    /// node has heard every live node and has its whole set; every node gets this one's.
    func linkCameUp() {
        linkUpAt = scheduler.now
        setJoined(false)
        // Nodes given up while the link was down were sent none of this node's values
        // meanwhile, without a seq to show it: they hear so before any value goes out now
        // (`meet`, when they are heard, would come after values).
        for name in givenUp.keys where toldGivenUp.insert(name).inserted { send(.node(name), Array("?d".utf8)) }
        sendSet(to: .everyone)
        sendHeartbeat()
        scheduler.after(linkUpAt.advanced(by: Self.joinAfter + Self.slack)) { [weak self] in self?.settleAll() }
    }

    /// Every heartbeat interval, while the link is up: says this node is alive, and gives up
    /// nodes silent for `aliveFor`. Returns the instances given up `forgetAfter` ago.
    func tick(linkUp: Bool) -> [String] {
        if linkUp { sendHeartbeat() }
        let now = scheduler.now
        for (name, peer) in peers where !isAlive(peer, now: now) {
            logger.notice(
                "cluster: a node silent for \(Self.aliveFor.components.seconds) seconds given up",
                metadata: ["instance": "\(name)"])
            remove(name)
            givenUp[name] = now
        }
        let forgotten = givenUp.filter { $0.value.advanced(by: Self.forgetAfter) < now }.map(\.key)
        for name in forgotten {
            givenUp[name] = nil
            toldGivenUp.remove(name)
        }
        settleAll()
        return forgotten
    }

    /// Says this node is stopping, so nobody waits for it.
    func sayGoodbye() { send(.heartbeat, Array("b \(nodeName)".utf8)) }

    /// Announces a new NATS subscription to `key`: returns the announcement's number.
    func announce(subscribed key: String) -> UInt64 {
        lastAnnouncement += 1
        let id = lastAnnouncement
        announcements[id] = Announcement(sentAt: scheduler.now)
        send(.everyone, Array("+\(id) \(key)".utf8))
        settle(id)
        return id
    }

    func announce(unsubscribed key: String) { send(.everyone, Array("-\(key)".utf8)) }

    /// Runs `action` once every other node has applied announcement `id` (or `ackWait` passed).
    func whenKnown(_ id: UInt64, _ action: @escaping () -> Void) {
        guard announcements[id] != nil else { return action() }
        announcements[id]!.waiters.append(action)
    }

    // MARK: From other nodes

    /// A heartbeat of `name`: `payload` is `u`, `j` or `b`, a space and its node name.
    func heard(_ name: String, payload: [UInt8]) {
        guard name != instance, let state = payload.first else { return }
        if state == UInt8(ascii: "b") {
            remove(name)
            return settleAll()
        }
        let known = peers[name] != nil
        meet(name)
        // A joining node asks for every node's set (one met just now has it already).
        if known && state == UInt8(ascii: "j") { sendSet(to: .node(name)) }
        settleAll()
    }

    /// A message of `name` to every node or to this one.
    func received(_ payload: [UInt8], from name: String) {
        guard name != instance, let kind = payload.first else { return }
        meet(name)
        let rest = payload.dropFirst()
        switch kind {
        case UInt8(ascii: "+"):
            guard let space = rest.firstIndex(of: UInt8(ascii: " ")) else { return }
            add(String(decoding: rest[space...].dropFirst(), as: UTF8.self), for: name)
            send(.node(name), Array("a".utf8) + rest[..<space])
        case UInt8(ascii: "-"):
            removeKey(String(decoding: rest, as: UTF8.self), for: name)
        case UInt8(ascii: "a"):
            guard let id = UInt64(String(decoding: rest, as: UTF8.self)), id > peers[name]!.acknowledged else { return }
            peers[name]!.acknowledged = id
            settleAll()
        case UInt8(ascii: "?"):
            sendSet(to: .node(name))
            if rest.first == UInt8(ascii: "d") {
                logger.notice("cluster: a node had given this one up; its plain subscriptions may have missed values")
                missedEverything()
            }
        case UInt8(ascii: "="):
            for key in peers[name]!.keys { removeKey(key, for: name) }
            peers[name]!.isReceivingSet = true
            addKeys(rest, for: name)
        case UInt8(ascii: "&"):
            addKeys(rest, for: name)
        case UInt8(ascii: "!"):
            guard peers[name]!.isReceivingSet else { return }
            peers[name]!.isReceivingSet = false
            peers[name]!.completeAt = scheduler.now
            send(.node(name), Array("a".utf8) + rest)
            settleAll()
        default:
            return
        }
    }

    // MARK: Private

    private func isAlive(_ peer: Peer, now: SchedulerTime? = nil) -> Bool {
        peer.heard.advanced(by: Self.aliveFor) >= (now ?? scheduler.now)
    }

    /// Notes that `name` is alive; one not known yet is asked for its whole set and gets this
    /// node's (told, when it had been given up, that values may have missed it).
    private func meet(_ name: String) {
        if peers[name] != nil {
            peers[name]!.heard = scheduler.now
            return
        }
        peers[name] = Peer(heard: scheduler.now)
        let wasGivenUp = givenUp.removeValue(forKey: name) != nil && toldGivenUp.remove(name) == nil
        if wasGivenUp {
            logger.notice(
                "cluster: a node given up is heard again; it is told this node's values may have missed it",
                metadata: ["instance": "\(name)"])
        }
        send(.node(name), Array((wasGivenUp ? "?d" : "?").utf8))
        sendSet(to: .node(name))
        setJoined(false)
        met(name)
    }

    private func remove(_ name: String) {
        guard let peer = peers.removeValue(forKey: name) else { return }
        for key in peer.keys { forgetWanted(key) }
        lost(name)
    }

    private func add(_ key: String, for name: String) {
        guard !key.isEmpty, peers[name]!.keys.insert(key).inserted else { return }
        wanted[key, default: 0] += 1
        if wanted[key] == 1 {
            if SubjectName.isPattern(key) { wantedPatterns[key] = SubjectPattern(key) }
            version &+= 1
        }
    }

    private func addKeys(_ bytes: ArraySlice<UInt8>, for name: String) {
        for key in bytes.split(separator: UInt8(ascii: "\n")) { add(String(decoding: key, as: UTF8.self), for: name) }
    }

    private func removeKey(_ key: String, for name: String) {
        guard peers[name]!.keys.remove(key) != nil else { return }
        forgetWanted(key)
    }

    private func forgetWanted(_ key: String) {
        wanted[key]! -= 1
        guard wanted[key] == 0 else { return }
        wanted[key] = nil
        wantedPatterns[key] = nil
        version &+= 1
    }

    private func setJoined(_ joined: Bool) {
        guard joined != isJoined else { return }
        isJoined = joined
        version &+= 1
        if joined {
            logger.debug("cluster: this node knows every live node's subscriptions", metadata: ["nodes": "\(nodes)"])
        }
    }

    /// Whether every live node has been heard since the link came up (`joinAfter` passed).
    var peersKnown: Bool { scheduler.now >= peersKnownAt }
    /// When `peersKnown` holds, unless the link goes down before.
    var peersKnownAt: SchedulerTime { linkUpAt.advanced(by: Self.joinAfter) }

    private func sendHeartbeat() { send(.heartbeat, Array("\(isJoined ? "u" : "j") \(nodeName)".utf8)) }

    /// This node's whole set, in parts of at most `setPart` bytes of keys.
    private func sendSet(to destination: Destination) {
        var part: [UInt8] = [UInt8(ascii: "=")]
        for key in localKeys() {
            if part.count > 1 && part.count + key.utf8.count >= Self.setPart {
                send(destination, part)
                part = [UInt8(ascii: "&")]
            }
            if part.count > 1 { part.append(UInt8(ascii: "\n")) }
            part.append(contentsOf: key.utf8)
        }
        send(destination, part)
        send(destination, Array("!\(lastAnnouncement)".utf8))
    }

    private func settleAll() {
        if !isJoined && peersKnown {
            let now = scheduler.now
            if peers.values.allSatisfy({ !isAlive($0, now: now) || $0.completeAt.map { $0 >= linkUpAt } ?? false }) {
                setJoined(true)
            }
        }
        for id in announcements.keys { settle(id) }
    }

    /// Ends announcement `id`'s wait when every live node acknowledged it (or a later one), or
    /// at its deadline; until every live node is known, it waits.
    private func settle(_ id: UInt64) {
        guard let announcement = announcements[id] else { return }
        let now = scheduler.now
        let deadline = max(announcement.sentAt, linkUpAt.advanced(by: Self.joinAfter)).advanced(by: Self.ackWait)
        let missing = peers.filter { isAlive($0.value, now: now) && $0.value.acknowledged < id }.map(\.key)
        if !peersKnown || (!missing.isEmpty && now < deadline) {
            if announcement.timerAt != deadline {
                announcements[id]!.timerAt = deadline
                scheduler.after(deadline.advanced(by: Self.slack)) { [weak self] in self?.settle(id) }
            }
            return
        }
        if !missing.isEmpty {
            logger.warning(
                "cluster: nodes did not acknowledge a subscription in time",
                metadata: ["nodes": "\(missing.sorted().joined(separator: ", "))"])
        }
        announcements[id] = nil
        for waiter in announcement.waiters { waiter() }
    }
}
