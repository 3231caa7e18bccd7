/// The other nodes' part of the counts `$sys.occupancy.S` reports: a cluster's
/// (`ClusterOccupancy`); a standalone server has none.
///
/// `OccupancyTracker` counts this node's subscriptions and adds what this says the others
/// count; it tells this which subjects it reads the occupancy of, and this node's count of
/// each subject another node reads it of.
///
/// Thread rules: loop thread only.
package protocol OccupancyPeers: AnyObject {
    /// The subscriptions the other nodes count for `subject`, as they last said (0 for a subject
    /// not watched).
    func count(of subject: String) -> Int
    /// This node reads `subject`'s occupancy from now on: the others are to say their counts.
    func watch(_ subject: String)
    /// This node no longer reads `subject`'s occupancy.
    func unwatch(_ subject: String)
    /// The subjects whose occupancy another node reads: this node tells it its counts of them.
    var watchedElsewhere: Dictionary<String, Set<String>>.Keys { get }
    /// This node's own count of `subject` (one of `watchedElsewhere`) may have changed.
    func tell(_ subject: String, count: Int)
    /// Where it reads this node's count of a subject (`OccupancyTracker.localCount`), and
    /// whom it tells that the others' count of one changed.
    var localCount: (String) -> Int { get set }
    var othersChanged: (String) -> Void { get set }
}
