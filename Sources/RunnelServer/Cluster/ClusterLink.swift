import Dispatch
import Glibc
import Logging
import Runnel
import RunnelBytes
import RunnelUV

/// A clustered node's link to its NATS system (docs/protocol.md, "Clusters"): its NATS
/// connection (and, through `retainedPublisher`, the second one retained values go out on),
/// whether it is up, the nodes heard from, and the NATS subjects the cluster uses.
///
/// Layout: a plain subject `S`'s values travel on the NATS subject `runnel.CLUSTER.v.S`
/// (runneld's `*` and `>` mean what NATS's do, so a pattern is a NATS subscription as it is),
/// sent only while another node wants them (`ClusterPeers`, whose messages go on
/// `runnel.CLUSTER.nodes`, `.interest` and `.to.INSTANCE`). The subjects' definitions
/// are the JetStream key-value bucket `RUNNEL_CLUSTER` (`ClusterDefinition`); a retained
/// subject of epoch `E` keeps its values in the stream `RUNNEL_CLUSTER_E`, on the subject
/// `runnel.CLUSTER.r.E` (a subject made anew is a new stream). Each plain value's reply subject
/// carries the node's instance (its name and a random part, new at every start), the
/// subject's epoch there and the instance's sequence for it (`INSTANCE.EPOCH.SEQ`: a subject
/// made anew starts again), so a receiver knows what it missed, and drops the second copy NATS
/// delivers when a value matches two of its subscriptions (a subject and a pattern). What one
/// loop turn sends into one subject goes as one message (`ClusterValueBatch`).
///
/// Thread rules: the loop thread, but for what cnats's threads post to the inbox, for the
/// worker's jobs, which use only what never changes (`jetStream`, `definitions`, the subjects'
/// names) and the calls marked "worker thread", and for what `sends` does on its own queue
/// (every publish, subscription and flush of the link's connection). Lifetime rule: made at start-up once NATS
/// answered; lives until the process stops (`close`).
package final class ClusterLink: @unchecked Sendable {
    let config: ClusterConfig
    /// This process among the cluster's nodes.
    package let instance: String
    private let connection: NATSConnection
    let jetStream: NATSJetStream
    /// Retained values' publishes, on a connection of their own.
    let retainedPublisher: ClusterRetainedPublisher
    /// Plain values, the nodes' messages and the NATS subscriptions, off the loop.
    private let sends: ClusterSendQueue
    /// The subjects' definitions.
    let definitions: NATSKeyValue
    /// Where the calls that wait for NATS's answer run (JetStream's administration, the
    /// bucket's writes, starting and stopping consumers), one after another, off every loop;
    /// their answers come back to the loop.
    let worker: LoopWorker
    let scheduler: LoopScheduler
    let logger: Logger
    /// Whether the link is up, as the last event the loop saw says.
    private(set) var isUp = true
    /// The other nodes, and the plain values they want.
    let peers: ClusterPeers
    /// The other nodes' occupancy counts.
    let occupancy: ClusterOccupancy
    private var heartbeat: Disposable?
    private(set) var valuesReceived: UInt64 = 0
    private(set) var linkLosses: UInt64 = 0
    /// What the link hands on: values of other nodes, and the link's changes.
    weak var receiver: (any ClusterReceiver)?

    /// The NATS subjects, made once: the values' prefix, the heartbeats', the subscriptions'
    /// announcements', this node's own, the retained streams' prefix, and the definitions'
    /// keys' prefix.
    let valuesPrefix: String
    let nodesSubject: String
    let interestSubject: String
    let directSubject: String
    let occupancySubject: String
    let streamPrefix: String
    let definitionsPrefix: String
    /// How often a node says it is alive.
    static let heartbeatInterval: Duration = .seconds(2)

    /// Connects to NATS as `config` says, retrying until `config.connectTimeout` has passed.
    /// Blocks: call it before the loop runs. The error names the URLs.
    package init(config: ClusterConfig, scheduler: LoopScheduler, logger: Logger) throws(NATSError) {
        self.config = config
        self.scheduler = scheduler
        self.logger = logger
        worker = LoopWorker(loop: scheduler, label: "runneld.cluster")
        instance = "\(config.nodeName)-\(String(UInt32.random(in: .min ... .max), radix: 16))"
        valuesPrefix = "runnel.\(config.name).v."
        nodesSubject = "runnel.\(config.name).nodes"
        interestSubject = "runnel.\(config.name).interest"
        directSubject = "runnel.\(config.name).to.\(instance)"
        let occupancySubject = "runnel.\(config.name).occupancy"
        self.occupancySubject = occupancySubject
        streamPrefix = "runnel.\(config.name).r."
        definitionsPrefix = "$KV.RUNNEL_\(config.name)."
        // The inbox exists before the connection, whose handlers may run at once; it reaches
        // the link through `reference`, set below on this thread (the loop's, before it runs).
        let reference = LoopBoundReference<ClusterLink>(loop: scheduler)
        let inbox = LoopInbox<ClusterDelivery>(loop: scheduler) { batch in reference.object?.receive(batch) }
        let handlers = NATSHandlers(
            linkChanged: { up in inbox.post(.link(up: up)) },
            message: { message in inbox.post(.message(message)) },
            error: { text, dropped in inbox.post(.error(text, dropped: dropped)) })
        connection = try Self.connect(config: config, name: "runneld \(config.nodeName)", handlers: handlers)
        jetStream = try connection.jetStream(
            wait: Self.jetStreamWait,
            handlers: NATSJetStreamHandlers(
                message: { message in inbox.post(.stream(message)) },
                published: { id, answer in inbox.post(.published(id: id, answer: answer)) }))
        definitions = try jetStream.keyValue("RUNNEL_\(config.name)", replicas: config.replicas)
        // Its link's changes are the first connection's to tell; its errors are logged.
        retainedPublisher = try ClusterRetainedPublisher(
            connection: Self.connect(
                config: config, name: "runneld \(config.nodeName) publisher",
                buffersWhileReconnecting: false,
                handlers: NATSHandlers(
                    linkChanged: { _ in }, message: { _ in },
                    error: { text, _ in inbox.post(.error(text, dropped: false)) })),
            scheduler: scheduler, published: { id, answer in inbox.post(.published(id: id, answer: answer)) })
        let sends = ClusterSendQueue(
            connection: connection, scheduler: scheduler, limit: config.sendBufferBytes, logger: logger)
        self.sends = sends
        let subjects = (
            nodes: nodesSubject, everyone: interestSubject, direct: "runnel.\(config.name).to."
        )
        peers = ClusterPeers(
            instance: instance, nodeName: config.nodeName, scheduler: scheduler, logger: logger
        ) { [instance] destination, payload in
            let subject =
                switch destination {
                case .everyone: subjects.everyone
                case .node(let name): subjects.direct + name
                case .heartbeat: subjects.nodes
                }
            sends.sendControl(payload, subject: subject, reply: instance)
        }
        occupancy = ClusterOccupancy(instance: instance, scheduler: scheduler) { [instance, occupancySubject] payload in
            sends.sendControl(payload, subject: occupancySubject, reply: instance)
        }
        reference.object = self
        peers.localKeys = { [weak self] in self?.receiver?.clusterInterestKeys ?? [] }
        peers.missedEverything = { [weak self] in self?.receiver?.clusterReportedLoss() }
        peers.met = { [occupancy] _ in occupancy.sendWatches() }
        peers.lost = { [occupancy] name in occupancy.forget(name) }
    }

    /// Tries every URL until one answers or the connect timeout has passed.
    private static func connect(
        config: ClusterConfig, name: String, buffersWhileReconnecting: Bool = true,
        handlers: NATSHandlers
    ) throws(NATSError) -> NATSConnection {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: config.connectTimeout)
        while true {
            let left = clock.now.duration(to: deadline)
            do throws(NATSError) {
                return try NATSConnection.connect(
                    servers: config.nats, name: name, credentials: (config.token, config.user, config.password),
                    timeout: min(left, .seconds(2)),
                    buffersWhileReconnecting: buffersWhileReconnecting, handlers: handlers)
            } catch {
                guard clock.now.advanced(by: .milliseconds(250)) < deadline else { throw error }
                usleep(250_000)
            }
        }
    }

    /// How long a JetStream request may wait for its answer.
    static let jetStreamWait: Duration = .seconds(5)

    /// Starts the heartbeat, listens for other nodes', and follows the definitions' changes
    /// (from the last of each key on: `ClusterReceiver.clusterStreamDelivered`). Blocks.
    package func start() throws(NATSError) {
        for subject in [nodesSubject, interestSubject, directSubject, occupancySubject] {
            _ = try connection.subscribe(subject)
        }
        _ = try jetStream.consume(
            "KV_RUNNEL_\(config.name)", subject: definitionsPrefix + ">", lastPerSubject: true)
        peers.linkCameUp()
        heartbeat = scheduler.after(
            scheduler.now.advanced(by: Self.heartbeatInterval), repeatingEvery: Self.heartbeatInterval,
            leeway: .milliseconds(100)
        ) { [weak self] in self?.tick() }
    }

    // MARK: Subjects

    /// The stream of a retained subject in epoch `epoch`, and its NATS subject.
    func streamName(epoch: String) -> String { "RUNNEL_\(config.name)_\(epoch)" }
    func streamSubject(epoch: String) -> String { streamPrefix + epoch }

    /// Values a retained subject's stream keeps at least, whatever its capacity: a node's
    /// consumer that falls behind by fewer loses nothing (by more, its subscribers are told).
    static let streamWindow = 1024

    /// Changes a map's stream keeps of each key: a node's consumer that falls behind by fewer
    /// writes of a key loses none of them (by more, its subscribers are told). More for maps of
    /// fewer keys, so that a map's stream holds at most about `max(2 × max_keys, 131,072)`.
    static func mapHistory(maxKeys: Int) -> Int { max(2, min(64, 131_072 / max(1, maxKeys))) }

    /// The NATS subjects of the stream of a subject in `epoch`: one for a replay or behavior
    /// subject, one per key under it for a map (`ClusterSubjectStore+Maps`).
    func streamSubjects(epoch: String, isMap: Bool) -> String {
        isMap ? streamSubject(epoch: epoch) + ".>" : streamSubject(epoch: epoch)
    }

    /// Makes the stream of the retained subject `definition` defines (worker thread), in files
    /// when durable: its capacity's values at least `streamWindow`; a map's latest changes of
    /// each key (`mapHistory`; its `ttl_s` is the nodes' to apply, not the stream's age).
    func addStream(for definition: ClusterDefinition) throws(NATSError) {
        let isMap = definition.kind == .map
        try jetStream.addStream(
            streamName(epoch: definition.epoch), subject: streamSubjects(epoch: definition.epoch, isMap: isMap),
            perSubject: isMap
                ? Self.mapHistory(maxKeys: definition.maxKeys ?? 1) : max(definition.capacity ?? 1, Self.streamWindow),
            maxAgeMilliseconds: isMap ? nil : definition.retainMilliseconds, file: definition.durable,
            replicas: config.replicas)
    }

    /// The NATS subject of a runneld subject or pattern.
    func natsSubject(of subject: String) -> String { valuesPrefix + subject }

    /// What a value of the plain subject `name` (in its epoch `epoch` here) is sent with: its
    /// NATS subject, and the start of its reply subject, `INSTANCE.EPOCH.` (the value's
    /// sequence number ends it), each NUL-terminated, made once per subject.
    func route(of name: String, epoch: String) -> ClusterRoute {
        ClusterRoute(
            subject: Array((valuesPrefix + name).utf8CString), replyPrefix: Array("\(instance).\(epoch).".utf8))
    }

    /// Sends `value`, the `seq`th this node sends by `route`, to the cluster: its origin and
    /// sequence travel as the reply subject (`INSTANCE.EPOCH.SEQ`; no node replies), which costs
    /// cnats nothing more than the subject. Off the loop (`ClusterSendQueue`): a value the queue
    /// cannot take, or cnats refuses (its buffer full while the link is down), is not sent, and
    /// the nodes that wanted it see the gap in `seq`.
    func send(_ value: ByteBuffer, route: ClusterRoute, seq: UInt64) {
        if !sends.send(value, route: route, seq: seq) {
            logger.debug("cluster: a value not sent, the send queue full", metadata: ["limit": "\(sends.limit)"])
        }
    }

    /// Values published to the cluster, and not sent (`ClusterSendQueue.dropped`).
    var valuesSent: UInt64 { sends.sent }
    var valuesNotSent: UInt64 { sends.dropped }

    /// Runs `then` on the loop once NATS has read what was sent and subscribed before it.
    func flush(then: @escaping @Sendable () -> Void) { sends.flush(then: then) }

    /// Subscribes in NATS to `subject` (a name or pattern), whose values then reach the
    /// receiver, and tells the other nodes (`ClusterPeers.announce`); off the loop, in order
    /// with what the node sends.
    func subscribe(_ subject: String) {
        sends.subscribe(natsSubject(of: subject), for: subject)
        _ = peers.announce(subscribed: subject)
    }

    /// Ends the NATS subscription `subscribe(subject)` made, and tells the other nodes.
    func unsubscribe(_ subject: String) {
        sends.unsubscribe(subject)
        peers.announce(unsubscribed: subject)
    }

    // MARK: Nodes

    /// Nodes heard from in the last 10 s, this one included.
    var nodes: Int { peers.nodes }

    private func tick() {
        // Instances silent for long are forgotten (a restarted node is a new one).
        let gone = peers.tick(linkUp: isUp)
        if !gone.isEmpty { receiver?.clusterForgot(gone) }
    }

    // MARK: From cnats's threads

    private func receive(_ batch: [ClusterDelivery]) {
        for delivery in batch {
            switch delivery {
            case .message(let message):
                guard let reply = message.reply else { continue }
                if message.subject == nodesSubject {
                    peers.heard(reply, payload: message.payload)
                    continue
                }
                if message.subject == interestSubject || message.subject == directSubject {
                    peers.received(message.payload, from: reply)
                    continue
                }
                if message.subject == occupancySubject {
                    occupancy.received(message.payload, from: reply)
                    continue
                }
                // INSTANCE.EPOCH.SEQ, or INSTANCE.EPOCH.FIRST-COUNT for a batch: an epoch holds
                // no dot; an instance may. This node's own values went to its subscribers as they
                // were published: NATS skips them on the connection that sent them (no echo), but
                // what an earlier connection left unsent reaches NATS after a reconnect, from a
                // client NATS still holds, and comes back on the new one.
                guard message.subject.hasPrefix(valuesPrefix), let last = reply.lastIndex(of: "."),
                    let (first, values) = ClusterValueBatch.read(
                        message.payload, token: reply[reply.index(after: last)...]),
                    let middle = reply[..<last].lastIndex(of: "."), reply[..<middle] != instance
                else { continue }
                valuesReceived &+= UInt64(values.count)
                receiver?.clusterDelivered(
                    values, subject: String(message.subject.dropFirst(valuesPrefix.utf8.count)),
                    origin: String(reply[..<middle]), epoch: String(reply[reply.index(after: middle)..<last]),
                    first: first)
            case .link(let up):
                guard up != isUp else { continue }
                isUp = up
                if up {
                    logger.notice("cluster: link to NATS back", metadata: ["node": "\(config.nodeName)"])
                    peers.linkCameUp()
                    occupancy.sendWatches()
                } else {
                    linkLosses &+= 1
                    logger.warning("cluster: link to NATS lost", metadata: ["node": "\(config.nodeName)"])
                }
                receiver?.clusterLinkChanged(up: up)
            case .error(let text, let dropped):
                logger.warning("cluster: NATS reports \(text)", metadata: ["node": "\(config.nodeName)"])
                if dropped { receiver?.clusterReportedLoss() }
            case .stream(let message):
                receiver?.clusterStreamDelivered(message)
            case .published(let id, let answer):
                receiver?.clusterPublished(id: id, answer: answer)
            }
        }
    }

    /// Stops the heartbeat and closes the connection (the process is stopping).
    func close() {
        heartbeat?.dispose()
        if isUp { peers.sayGoodbye() }
        sends.drain(within: .seconds(1))
        connection.close()
        retainedPublisher.close()
    }
}

/// What a `ClusterLink` hands on, on the loop thread.
protocol ClusterReceiver: AnyObject {
    /// Values another node sent into `subject`: from the `first`th of instance `origin` there
    /// on, consecutive, in the subject's epoch `epoch` there.
    func clusterDelivered(_ values: ClusterValueBatch, subject: String, origin: String, epoch: String, first: UInt64)
    /// Instances not heard from for long: what is kept about them may go.
    func clusterForgot(_ origins: [String])
    /// The subjects and patterns this node holds NATS subscriptions to.
    var clusterInterestKeys: [String] { get }
    /// The link went down or came back.
    func clusterLinkChanged(up: Bool)
    /// cnats dropped messages it could not deliver in time (a subscription's pending limit).
    func clusterReportedLoss()
    /// A message of a stream the node consumes: a definition's change, or a retained value.
    func clusterStreamDelivered(_ message: NATSStreamMessage)
    /// JetStream answered the publish `id`.
    func clusterPublished(id: String, answer: NATSPublishAnswer)
}

/// How a plain subject's values are sent to the cluster (`ClusterLink.route(of:epoch:)`), made
/// at the subject's first value and kept on its entry (`SubjectEntry.sharingState`).
///
/// Thread rules: loop thread only. Lifetime rule: lives as long as its entry.
final class ClusterRoute {
    /// The NATS subject, NUL-terminated.
    let subject: [CChar]
    /// `INSTANCE.EPOCH.`, to which each value's sequence number is added.
    let replyPrefix: [UInt8]
    /// Whether another node wants the subject's values, as `ClusterPeers.wants` answered at
    /// its `version` `peersVersion` (nil: not asked yet).
    var isWanted = false
    var peersVersion: UInt64?
    /// Values published here to the subject, sent or not: each value's sequence number in the
    /// cluster. A value not sent (no other node wanted it, as far as this node knew) spends its
    /// number all the same, so a node that did want it sees the gap and reports it.
    var published: UInt64 = 0

    init(subject: [CChar], replyPrefix: [UInt8]) {
        self.subject = subject
        self.replyPrefix = replyPrefix
    }
}
