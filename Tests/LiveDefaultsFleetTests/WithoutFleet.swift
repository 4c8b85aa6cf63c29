#if !Fleet
    import Testing

    /// The fleet's suites need LiveDefaultsFleet's etcd client, which the package builds only with its trait Fleet.
    @Test(.disabled("LiveDefaultsFleet is built only with the package trait Fleet: swift test --traits Fleet"))
    func fleetSuitesNeedTheTraitFleet() {}
#endif
