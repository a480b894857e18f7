<?php
// Two subscribers on one topic; COUNT messages published: each subscriber gets all of
// them, in order.
// Usage: php topic_fanout.php PORT DESTINATION COUNT

declare(strict_types=1);
require __DIR__ . "/common.php";

[, $port, $destination, $count] = $argv;
$subscribers = [connect_to((int) $port), connect_to((int) $port)];
foreach ($subscribers as $n => $subscriber) {
    $subscriber->subscribe($destination, ["receipt" => "sub$n"]);
}
$producer = connect_to((int) $port);
for ($i = 0; $i < (int) $count; $i++) {
    $producer->send($destination, "t$i", ["receipt" => "sent$i"]);
}
$received = [];
foreach ($subscribers as $n => $subscriber) {
    $received[$n] = [];
    for ($i = 0; $i < (int) $count; $i++) {
        $received[$n][] = next_message($subscriber, "subscriber $n after $i messages")->body;
    }
}
report(["received" => $received]);
