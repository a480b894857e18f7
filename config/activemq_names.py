"""Names from ActiveMQ 5.17's own schema (activemq.xsd in activemq-spring.jar).

They let the loader tell an ActiveMQ feature stompd does not implement (a warning: the
file is a valid ActiveMQ file) from a misspelling (an error: ActiveMQ would refuse it too).
"""

from __future__ import annotations


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Every element name ActiveMQ's schema defines (beans and property elements).
ELEMENTS = _names(
    """
    MBeanServer SSLContext abortSlowAckConsumerStrategy abortSlowConsumerStrategy adapter address
    adminACLs adminConnectionContext adminView authenticationUser authorizationEntries
    authorizationEntry authorizationMap authorizationPlugin axionJDBCAdapter bind blobJDBCAdapter
    blobTransferPolicy bridge bridgeFactory broker brokerContext brokerInfo brokerObjectName
    brokerService buffer bytesJDBCAdapter cachedLDAPAuthorizationMap cachedMessageGroupMapFactory
    clientIdFilterDispatchPolicy clientIdGenerator clientInternalExceptionListener
    compositeDemandForwardingBridge compositeDestinations compositeQueue compositeTopic
    conditionalNetworkBridgeFilterFactory config configuration connection connectionDotFilePlugin
    connectionFactory connectionFilter connectionIdGenerator constantPendingMessageLimitStrategy
    consumer consumerConnection consumerQueue consumerSystemUsage consumerTopic context
    createLockSchemaStatements createSchemaStatements dataDirectoryFile dataSource database-locker
    databaseLocker db2JDBCAdapter deadLetterQueue deadLetterStrategy defaultEntry
    defaultIOExceptionHandler defaultJDBCAdapter defaultNetworkBridgeFilterFactory
    defaultUsageCapacity demandForwardingBridge destination destinationDotFilePlugin
    destinationEntry destinationFactory destinationInterceptors destinationPathSeparatorPlugin
    destinationPolicy destinations destinationsPlugin directory directoryArchive discarding
    discardingDLQBrokerPlugin discardingDeadLetterStrategy discoveryAgent discoveryURI discoveryUri
    dispatchPolicy dropSchemaStatements ds durableDestinations dynamicallyIncludedDestinations
    entries environment exceptionHandler exceptionListener excludedDestinations exclusiveConsumer
    executor fileCursor fileDurableSubscriberCursor fileQueueCursor filter filteredDestination
    filteredKahaDB filteredPersistenceAdapters fixedCountSubscriptionRecoveryPolicy
    fixedSizedSubscriptionRecoveryPolicy forcePersistencyModeBroker forcePersistencyModeBrokerPlugin
    forwardTo forwardingBridge hostMapping hsqldb-jdbc-adapter imageBasedJDBCAdaptor
    inboundMessageConvertor inboundQueueBridge inboundQueueBridges inboundTopicBridge
    inboundTopicBridges indexDirectory individualDeadLetterStrategy informixJDBCAdapter
    ioExceptionHandler jDBCIOExceptionHandler jaasAuthenticationPlugin
    jaasCertificateAuthenticationPlugin jaasDualAuthenticationPlugin jdbcAdapter
    jdbcPersistenceAdapter jmsBridgeConnectors jmsConnector jmsMessageConvertor jmsQueueConnector
    jmsTopicConnector jobSchedulerStore jobSchedulerUsage journal journalArchiveDirectory
    journalPersistenceAdapter journalPersistenceAdapterFactory journaledJDBC kahaDB keyManagers
    lDAPAuthorizationMap lastImageSubscriptionRecoveryPolicy ldapNetworkConnector lease-database-
    locker leaseLockerIOExceptionHandler levelDB limiter localBroker localQueueConnection
    localQueueConnectionFactory localTopicConnection localTopicConnectionFactory localTransport
    localUri location lockDataSource lockable locker loggingBrokerPlugin longTermPersistence mKahaDB
    managementContext map maxdb-jdbc-adapter mbeanObjectName memoryPersistenceAdapter memoryUsage
    messageAuthorizationPolicy messageEvictionStrategy messageGroupHashBucketFactory
    messageGroupMapFactory mirroredQueue multicastNetworkConnector multicastTraceBrokerPlugin mysql-
    jdbc-adapter networkBridgeFailedListener networkBridgeFilterFactory networkBridgeListener
    networkConnector networkConnectorURIs networkConnectors next noSubscriptionRecoveryPolicy
    objectName oldestMessageEvictionStrategy oldestMessageWithLowestPriorityEvictionStrategy options
    oracleBlobJDBCAdapter oracleJDBCAdapter outboundMessageConvertor outboundQueueBridge
    outboundQueueBridges outboundQueueConnection outboundQueueConnectionFactory outboundTopicBridge
    outboundTopicBridges outboundTopicConnection outboundTopicConnectionFactory pListStoreImpl
    parent partitionBrokerPlugin pendingDurableSubscriberPolicy pendingMessageLimitStrategy
    pendingQueuePolicy pendingSubscriberPolicy persistFile persistenceAdapter persistenceFactory
    persistenceTaskRunnerFactory plugins policyEntries policyEntry policyMap pooledConnectionFactory
    portMapping postgresql-jdbc-adapter prefetchPolicy prefetchRatePendingMessageLimitStrategy
    priorityDispatchPolicy priorityNetworkDispatchPolicy producerConnection producerQueue
    producerSystemUsage producerTopic properties proxyConnector proxyConnectors
    publishedAddressPolicy query queryBasedSubscriptionRecoveryPolicy queue queueDispatchSelector
    queueSearchMatchingFormat readACLs reconnectionPolicy redeliveryPlugin redeliveryPolicy
    redeliveryPolicyEntries redeliveryPolicyMap regionBroker rejectedTaskHandler remote remoteBroker
    remoteTransport remoteURI replicatedLevelDB retainedMessageSubscriptionRecoveryPolicy
    roundRobinDispatchPolicy runtimeConfigurationPlugin scheduledThreadPoolExecutor
    schedulerDirectoryFile secureRandom server services sessionTaskRunner shared-file-locker
    sharedDeadLetterStrategy shutdownHooks simpleAuthenticationPlugin simpleAuthorizationMap
    simpleDispatchPolicy simpleDispatchSelector simpleJmsMessageConvertor
    simpleMessageGroupMapFactory slowConsumerStrategy sqlServerJDBCAdapter sslContext startException
    statements staticallyIncludedDestinations statisticsBrokerPlugin store storeCursor
    storeDurableSubscriberCursor storeUsage streamJDBCAdapter strictOrderDispatchPolicy
    subscriptionRecoveryPolicy sybase-jdbc-adapter systemUsage taskRunnerFactory tempDataStore
    tempDestinationAuthorizationEntry tempQueue tempStore tempTopic tempUsage template
    threadClassLoader timeStampingBrokerPlugin timedSubscriptionRecoveryPolicy tmpDataDirectory
    topic topicSearchMatchingFormat traceBrokerPathPlugin transact-database-locker transact-jdbc-
    adapter transactionIdTransformer transactionManager transactionStore transformer
    transportConnector transportConnectorURIs transportConnectors transportListener trustManagers
    trustedPackages udpTraceBrokerPlugin uniquePropertyMessageEvictionStrategy uri usage
    usageCapacity usageManager userGroups userPasswords users value virtualDestinationInterceptor
    virtualDestinations virtualSelectorCacheBrokerPlugin virtualTopic vmConnectorURI vmCursor
    vmDurableCursor vmQueueCursor wireFormat wireFormatFactory wrapped writeACLs xaConnectionFactory
    """
)

#: The attributes ActiveMQ accepts on each element stompd reads.
ATTRIBUTES: dict[str, frozenset[str]] = {
    "authenticationUser": _names("groups password username"),
    "authorizationEntry": _names("admin destination groupClass queue read tempQueue tempTopic topic write"),
    "authorizationMap": _names("defaultEntry groupClass tempDestinationAuthorizationEntry"),
    "authorizationPlugin": _names("map"),
    "broker": _names(
        "adjustUsageLimits adminView advisorySupport allowTempAutoCreationOnSend "
        "anonymousProducerAdvisorySupport brokerContext brokerId brokerName brokerObjectName "
        "cacheTempDestinations consumerSystemUsage consumerSystemUsagePortion dataDirectory "
        "dataDirectoryFile dedicatedTaskRunner deleteAllMessagesOnStartup destinationFactory "
        "destinationPolicy diskUsageCheckRegrowThreshold enableMessageExpirationOnActiveDurableSubs"
        " enableStatistics ioExceptionHandler jobSchedulerStore keepDurableSubsActive "
        "managementContext maxPurgedDestinationsPerSweep maxSchedulerRepeatAllowed "
        "mbeanInvocationTimeout messageAuthorizationPolicy monitorConnectionSplits "
        "networkConnectorStartAsync offlineDurableSubscriberTaskSchedule "
        "offlineDurableSubscriberTimeout passiveSlave persistenceAdapter persistenceFactory "
        "persistenceTaskRunnerFactory persistenceThreadPriority persistent populateJMSXUserID "
        "populateUserNameInMBeans producerSystemUsage producerSystemUsagePortion regionBroker "
        "rejectDurableConsumers restartAllowed rollbackOnlyOnAsyncException "
        "schedulePeriodForDestinationPurge schedulePeriodForDiskUsageCheck schedulerDirectory "
        "schedulerDirectoryFile schedulerSupport shutdownOnMasterFailure shutdownOnSlaveFailure "
        "splitSystemUsageForProducersConsumers sslContext start startAsync startException "
        "storeOpenWireVersion systemExitOnShutdown systemExitOnShutdownExitCode systemUsage "
        "taskRunnerFactory taskRunnerPriority tempDataStore timeBeforePurgeTempDestinations "
        "tmpDataDirectory useAuthenticatedPrincipalForJMSXUserID useJmx useLocalHostBrokerName "
        "useLoggingForShutdownErrors useMirroredQueues useShutdownHook useTempMirroredQueues "
        "useVirtualDestSubs useVirtualDestSubsOnCreation useVirtualTopics vmConnectorURI "
        "waitForSlave waitForSlaveTimeout"
    ),
    "discardingDeadLetterStrategy": _names(
        "deadLetterQueue enableAudit expiration maxAuditDepth maxProducersToAudit processExpired "
        "processNonPersistent"
    ),
    "individualDeadLetterStrategy": _names(
        "destinationPerDurableSubscriber enableAudit expiration maxAuditDepth maxProducersToAudit "
        "processExpired processNonPersistent queuePrefix queueSuffix topicPrefix topicSuffix "
        "useQueueForQueueMessages useQueueForTopicMessages"
    ),
    "kahaDB": _names(
        "archiveCorruptedIndex archiveDataLogs brokerName brokerService checkForCorruptJournalFiles"
        " checkpointInterval checksumJournalFiles cleanupInterval cleanupOnStop "
        "compactAcksAfterNoGC compactAcksIgnoresStoreGrowth concurrentStoreAndDispatchQueues "
        "concurrentStoreAndDispatchTopics databaseLockedWaitDelay directory directoryArchive "
        "enableAckCompaction enableIndexDiskSyncs enableIndexPageCaching enableIndexRecoveryFile "
        "enableIndexWriteAsync enableJournalDiskSyncs enableSubscriptionStatistics "
        "failoverProducersAuditDepth forceRecoverIndex ignoreMissingJournalfiles indexCacheSize "
        "indexDirectory indexLFUEvictionFactor indexWriteBatchSize journalDiskSyncInterval "
        "journalDiskSyncStrategy journalMaxFileLength journalMaxWriteBatchSize lockKeepAlivePeriod "
        "locker maxAsyncJobs maxFailoverProducersToTrack preallocationScope preallocationStrategy "
        "purgeRecoveredXATransactionStrategy scheduledThreadPoolExecutor stopOnError "
        "transactionIdTransformer usageManager useIndexLFRUEviction useLock"
    ),
    "fixedCountSubscriptionRecoveryPolicy": _names("broker maximumSize"),
    "fixedSizedSubscriptionRecoveryPolicy": _names("broker buffer maximumSize useSharedBuffer"),
    "lastImageSubscriptionRecoveryPolicy": _names("broker"),
    "timedSubscriptionRecoveryPolicy": _names("broker recoverDuration"),
    "queryBasedSubscriptionRecoveryPolicy": _names("broker query"),
    "retainedMessageSubscriptionRecoveryPolicy": _names("broker wrapped"),
    "noSubscriptionRecoveryPolicy": _names("broker"),
    "shared-file-locker": _names("directory failIfLocked lockAcquireSleepInterval lockable name"),
    "levelDB": _names(
        "asyncBufferSize autoCompactionRatio brokerName directory failIfLocked "
        "indexBlockRestartInterval indexBlockSize indexCacheSize indexCompression indexFactory "
        "indexMaxOpenFiles indexWriteBufferSize lockKeepAlivePeriod logCompression logDirectory "
        "logSize monitorStats paranoidChecks sync useLock verifyChecksums"
    ),
    "memoryUsage": _names(
        "executor limit limiter name parent percentOfJvmHeap percentUsage percentUsageMinDelta "
        "pollingTime portion usage usagePortion"
    ),
    "policyEntry": _names(
        "advisoryForConsumed advisoryForDelivery advisoryForDiscardingMessages "
        "advisoryForFastProducers advisoryForSlowConsumers advisoryWhenFull "
        "allConsumersExclusiveByDefault alwaysRetroactive blockedProducerWarningInterval "
        "consumersBeforeDispatchStarts cursorMemoryHighWaterMark deadLetterStrategy destination "
        "dispatchPolicy doOptimzeMessageStorage durableTopicPrefetch enableAudit "
        "expireMessagesPeriod gcInactiveDestinations gcWithNetworkConsumers inactiveTimeoutBeforeGC"
        " inactiveTimoutBeforeGC includeBodyForAdvisory lazyDispatch maxAuditDepth "
        "maxBrowsePageSize maxDestinations maxExpirePageSize maxPageSize maxProducersToAudit "
        "maxQueueAuditDepth memoryLimit messageEvictionStrategy messageGroupMapFactory "
        "messageGroupMapFactoryType minimumMessageSize networkBridgeFilterFactory "
        "optimizeMessageStoreInFlightLimit optimizedDispatch pendingDurableSubscriberPolicy "
        "pendingMessageLimitStrategy pendingQueuePolicy pendingSubscriberPolicy "
        "persistJMSRedelivered prioritizedMessages producerFlowControl queue queueBrowserPrefetch "
        "queuePrefetch reduceMemoryFootprint sendAdvisoryIfNoConsumers sendDuplicateFromStoreToDLQ "
        "sendFailIfNoSpace sendFailIfNoSpaceAfterTimeout slowConsumerStrategy "
        "storeUsageHighWaterMark strictOrderDispatch subscriptionRecoveryPolicy tempQueue tempTopic"
        " timeBeforeDispatchStarts topic topicPrefetch useCache useConsumerPriority "
        "usePrefetchExtension useTopicSubscriptionInflightStats"
    ),
    "networkConnector": _names(
        "advisoryAckPercentage advisoryForFailedForward advisoryPrefetchSize alwaysSyncSend autoStart "
        "bridgeFactory bridgeTempDestinations brokerName brokerService brokerURL "
        "checkDuplicateMessagesOnDuplex clientIdToken conduitNetworkQueueSubscriptions "
        "conduitSubscriptions connectionFilter consumerPriorityBase consumerTTL "
        "decreaseNetworkConsumerPriority destinationFilter discoveryAgent discoveryURI dispatchAsync "
        "duplex durableDestinations dynamicOnly dynamicallyIncludedDestinations excludedDestinations "
        "gcDestinationViews gcSweepTime localUri messageTTL name networkTTL objectName password "
        "prefetchSize remotePassword remoteUserName staticBridge staticallyIncludedDestinations "
        "suppressDuplicateQueueSubscriptions suppressDuplicateTopicSubscriptions syncDurableSubs uri "
        "useBrokerNamesAsIdSeed useCompression useVirtualDestSubs userName"
    ),
    "discardingDLQBrokerPlugin": _names(
        "adminConnectionContext dropAll dropOnly dropTemporaryQueues dropTemporaryTopics next reportInterval"
    ),
    "forcePersistencyModeBrokerPlugin": _names("adminConnectionContext next persistenceFlag"),
    "loggingBrokerPlugin": _names(
        "adminConnectionContext logAll logConnectionEvents logConsumerEvents logInternalEvents "
        "logProducerEvents logSessionEvents logTransactionEvents next perDestinationLogger"
    ),
    "constantPendingMessageLimitStrategy": _names("limit"),
    "prefetchRatePendingMessageLimitStrategy": _names("multiplier"),
    "oldestMessageEvictionStrategy": _names("evictExpiredMessagesHighWatermark"),
    "oldestMessageWithLowestPriorityEvictionStrategy": _names("evictExpiredMessagesHighWatermark"),
    "uniquePropertyMessageEvictionStrategy": _names("evictExpiredMessagesHighWatermark propertyName"),
    "abortSlowConsumerStrategy": _names(
        "abortConnection brokerService checkPeriod ignoreNetworkConsumers maxSlowCount maxSlowDuration name"
    ),
    "abortSlowAckConsumerStrategy": _names(
        "abortConnection brokerService checkPeriod ignoreIdleConsumers ignoreNetworkConsumers "
        "maxSlowCount maxSlowDuration maxTimeSinceLastAck name"
    ),
    "timeStampingBrokerPlugin": _names(
        "adminConnectionContext futureOnly next processNetworkMessages ttlCeiling zeroExpirationOverride"
    ),
    "policyMap": _names("defaultEntry"),
    "redeliveryPlugin": _names(
        "adminConnectionContext fallbackToDeadLetter next redeliveryPolicyMap sendToDlqIfMaxRetriesExceeded"
    ),
    "redeliveryPolicy": _names(
        "backOffMultiplier collisionAvoidancePercent destination initialRedeliveryDelay "
        "maximumRedeliveries maximumRedeliveryDelay preDispatchCheck queue redeliveryDelay "
        "tempQueue tempTopic topic useCollisionAvoidance useExponentialBackOff"
    ),
    "redeliveryPolicyMap": _names("defaultEntry"),
    "sharedDeadLetterStrategy": _names(
        "deadLetterQueue enableAudit expiration maxAuditDepth maxProducersToAudit processExpired "
        "processNonPersistent"
    ),
    "simpleAuthenticationPlugin": _names(
        "anonymousAccessAllowed anonymousGroup anonymousUser userGroups userPasswords"
    ),
    "sslContext": _names(
        "SSLContext crlPath keyStore keyStoreAlgorithm keyStoreKeyPassword keyStorePassword "
        "keyStoreType protocol provider secureRandom secureRandomAlgorithm trustStore "
        "trustStoreAlgorithm trustStorePassword trustStoreType"
    ),
    "storeUsage": _names(
        "executor limit limiter name parent percentLimit percentUsage percentUsageMinDelta "
        "pollingTime store total usagePortion"
    ),
    "systemUsage": _names(
        "adapter checkLimitsLogLevel executor jobSchedulerStore jobSchedulerUsage memoryUsage name "
        "parent sendFailIfNoSpace sendFailIfNoSpaceAfterTimeout sendFailIfNoSpaceExplicitySet "
        "storeUsage tempStore tempUsage"
    ),
    "tempDestinationAuthorizationEntry": _names(
        "admin destination groupClass queue read tempQueue tempTopic topic write"
    ),
    "tempUsage": _names(
        "executor limit limiter name parent percentLimit percentUsage percentUsageMinDelta "
        "pollingTime store total usagePortion"
    ),
    "transportConnector": _names(
        "allowLinkStealing auditNetworkProducers brokerInfo brokerService disableAsyncDispatch "
        "discoveryAgent discoveryUri displayStackTrace enableStatusMonitor "
        "maximumConsumersAllowedPerConnection maximumProducersAllowedPerConnection "
        "messageAuthorizationPolicy name publishedAddressPolicy rebalanceClusterClients server "
        "taskRunnerFactory updateClusterClients updateClusterClientsOnRemove updateClusterFilter "
        "uri warnOnRemoteClose"
    ),
    "virtualTopic": _names(
        "concurrentSend dropOnResourceLimit local name postfix prefix selectorAware "
        "setOriginalDestination transactedSend"
    ),
    "compositeQueue": _names("concurrentSend copyMessage forwardOnly forwardTo name sendWhenNotMatched"),
    "compositeTopic": _names("concurrentSend copyMessage forwardOnly forwardTo name sendWhenNotMatched"),
    "mirroredQueue": _names("brokerService copyMessage postfix prefix"),
    "filteredDestination": _names("destination filter queue selector topic"),
}
