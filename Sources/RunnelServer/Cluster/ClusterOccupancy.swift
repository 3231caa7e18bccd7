import Runnel

/// Occupancy across a cluster (docs/protocol.md, "Occupancy"): `$sys.occupancy.S` counts the
/// subscriptions of every node, so each node tells the nodes that read S's occupancy its own
/// count of S, and adds theirs to its own.
///
/// Messages go to every node on `runnel.C.occupancy` (reply subject: the sender's instance),
/// each a list of lines, applied in order:
/// - `w S`: the sender reads S's occupancy: every node answers `c` for S, and tells it again
///   whenever its count of S changes;
/// - `u S`: it no longer does;
/// - `=`: forget what the sender read (its whole list follows, as `w` lines);
/// - `c N S`: the sender counts N subscriptions for S.
/// A node sends its whole list when its link comes up and when it meets a node; a node given
/// up (`ClusterPeers`: silent, or said goodbye) is forgotten, its counts and what it read. What
/// goes out in one turn of the loop goes as one message (at most `part` bytes).
///
/// Thread rules: loop thread only. Lifetime rule: owned by its `ClusterLink`; told of the
/// tracker through `localCount` and `othersChanged`, which it holds weakly.
final class ClusterOccupancy: OccupancyPeers, @unchecked Sendable {
    let instance: String
    private let scheduler: any Scheduler
    private let send: ([UInt8]) -> Void
    /// This node's count of a subject now.
    var localCount: (String) -> Int = { _ in 0 }
    /// The other nodes' count of a subject this node watches changed.
    var othersChanged: (String) -> Void = { _ in }

    /// For each subject this node watches, each other instance's count (none: 0).
    private var counts: [String: [String: Int]] = [:]
    /// For each subject other nodes watch, which instances.
    private var watchers: [String: Set<String>] = [:]
    /// The count last told of each subject in `watchers`.
    private var told: [String: Int] = [:]
    /// Lines waiting for the end of the loop's turn, and whether that send is arranged.
    private var outgoing: [UInt8] = []
    private var isFlushScheduled = false
    /// The most bytes of lines in one message: the bound of the nodes' other messages.
    static let part = ClusterPeers.setPart

    init(instance: String, scheduler: any Scheduler, send: @escaping ([UInt8]) -> Void) {
        self.instance = instance
        self.scheduler = scheduler
        self.send = send
    }

    // MARK: OccupancyPeers

    func count(of subject: String) -> Int { counts[subject]?.values.reduce(0, +) ?? 0 }

    func watch(_ subject: String) {
        guard counts[subject] == nil else { return }
        counts[subject] = [:]
        enqueue("w \(subject)")
    }

    func unwatch(_ subject: String) {
        guard counts.removeValue(forKey: subject) != nil else { return }
        enqueue("u \(subject)")
    }

    var watchedElsewhere: Dictionary<String, Set<String>>.Keys { watchers.keys }

    func tell(_ subject: String, count: Int) {
        guard watchers[subject] != nil, told[subject] != count else { return }
        told[subject] = count
        enqueue("c \(count) \(subject)")
    }

    // MARK: The link's events

    /// The link came up, or `ClusterPeers` met a node: every node gets this one's whole list.
    func sendWatches() {
        enqueue("=")
        for subject in counts.keys { enqueue("w \(subject)") }
    }

    /// `name` was given up: its counts and what it read go.
    func forget(_ name: String) {
        for (subject, byNode) in counts where byNode[name] != nil {
            counts[subject]![name] = nil
            othersChanged(subject)
        }
        for subject in watchers.keys { stopTelling(subject, to: name) }
    }

    /// A message of instance `name`.
    func received(_ payload: [UInt8], from name: String) {
        guard name != instance else { return }
        for line in payload.split(separator: UInt8(ascii: "\n")) {
            let text = String(decoding: line, as: UTF8.self)
            switch text.first {
            case "w":
                let subject = String(text.dropFirst(2))
                watchers[subject, default: []].insert(name)
                let count = localCount(subject)
                told[subject] = count
                enqueue("c \(count) \(subject)")
            case "u":
                stopTelling(String(text.dropFirst(2)), to: name)
            case "=":
                for subject in watchers.keys { stopTelling(subject, to: name) }
            case "c":
                let fields = text.dropFirst(2).split(separator: " ", maxSplits: 1)
                guard fields.count == 2, let count = Int(fields[0]), count >= 0 else { continue }
                let subject = String(fields[1])
                guard let byNode = counts[subject], byNode[name] ?? 0 != count else { continue }
                counts[subject]![name] = count == 0 ? nil : count
                othersChanged(subject)
            default:
                continue
            }
        }
    }

    // MARK: Private

    private func stopTelling(_ subject: String, to name: String) {
        guard watchers[subject]?.remove(name) != nil, watchers[subject]!.isEmpty else { return }
        watchers[subject] = nil
        told[subject] = nil
    }

    /// Queues `line`; the first of a turn arranges the send at its end (one send a turn, and
    /// one more for each full part sent on the way).
    private func enqueue(_ line: String) {
        if outgoing.count + line.utf8.count >= Self.part { flush() }
        if !outgoing.isEmpty { outgoing.append(UInt8(ascii: "\n")) }
        outgoing.append(contentsOf: line.utf8)
        guard !isFlushScheduled else { return }
        isFlushScheduled = true
        scheduler.schedule { [weak self] in
            self?.isFlushScheduled = false
            self?.flush()
        }
    }

    private func flush() {
        guard !outgoing.isEmpty else { return }
        send(outgoing)
        outgoing = []
    }
}
