/// What the node asks of its cluster (`SharedSubjects`), answered by the clustered node's store
/// and its link: the node's code names no cluster type.
extension ClusterSubjectStore: SharedSubjects {
    var sharing: (any SharedSubjects)? { self }
    var readers: any SubscriptionInterest { interest }
    var isLinked: Bool { link.isUp }
    var sharedFigures: any SharedFigures { figures }
    var occupancyPeers: any OccupancyPeers { link.occupancy }
    var adopted: (String) -> Void {
        get { definitionSync.adopted }
        set { definitionSync.adopted = newValue }
    }
}
