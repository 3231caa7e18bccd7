/// What the node asks of its cluster (`SharedSubjects`), answered by the clustered node's store
/// and its link: the node's code names no cluster type.
extension ClusterSubjectStore: SharedSubjects {
    package var sharing: (any SharedSubjects)? { self }
    package var readers: any SubscriptionInterest { interest }
    package var isLinked: Bool { link.isUp }
    package var sharedFigures: any SharedFigures { figures }
    package var occupancyPeers: any OccupancyPeers { link.occupancy }
    package var adopted: (String) -> Void {
        get { definitionSync.adopted }
        set { definitionSync.adopted = newValue }
    }
}
