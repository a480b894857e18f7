<?php
// Subscribe with client acks to a queue that already holds COUNT messages, and take
// them all, acknowledging each.  Then "end" is sent: it must be the next message on a
// new subscription (nothing left unacknowledged came back before it).
// Usage: php queue_backlog.php PORT DESTINATION COUNT

declare(strict_types=1);
require __DIR__ . "/common.php";

[, $port, $destination, $count] = $argv;
$consumer = connect_to((int) $port);
$consumer->subscribe($destination, ["ack" => "client", "receipt" => "sub"]);
$bodies = [];
for ($i = 0; $i < (int) $count; $i++) {
    $frame = next_message($consumer, "consumer after " . count($bodies) . " messages");
    $bodies[] = $frame->body;
    $consumer->ack($frame, ["receipt" => "ack$i"]);
}
$consumer->unsubscribe($destination, ["receipt" => "unsub"]);
$consumer->send($destination, "end", ["receipt" => "end"]);
$consumer->subscribe($destination, ["ack" => "client", "receipt" => "sub2"]);
$next = next_message($consumer, "consumer after the backlog");
$consumer->ack($next);
report(["bodies" => $bodies, "next" => $next->body]);
