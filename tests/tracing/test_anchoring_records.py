"""Wrong-record slips in tool-calling dialogues: how a reply names the record it
describes (stop 24 of issue 11). Each rule is pinned on both sides."""

from __future__ import annotations

import pytest

from tests.tracing.helpers import Run

# The user's request names the records the calls look up.
TASK = "My orders are #W5490111 and #W7387996; products 3377618313, 8310926033, 1075968781 and 8940227892."
CAMERAS = {"name": "Action Camera", "product_id": "3377618313", "variants": {
    "111": {"item_id": "111", "options": {"resolution": "4K", "waterproof": "yes", "color": "silver"}, "price": 481.5},
    "222": {"item_id": "222", "options": {"resolution": "5K", "waterproof": "yes", "color": "silver"}, "price": 538.6},
    "333": {"item_id": "333", "options": {"resolution": "1080p", "waterproof": "no", "color": "black"},
            "price": 503.51}}}
BOTTLES = {"name": "Water Bottle", "product_id": "8310926033", "variants": {
    "511": {"item_id": "511", "options": {"capacity": "1000ml", "material": "stainless steel", "color": "red"},
            "price": 49.51},
    "512": {"item_id": "512", "options": {"capacity": "500ml", "material": "stainless steel", "color": "black"},
            "price": 52.79}}}
KETTLES = {"name": "Electric Kettle", "product_id": "1075968781", "variants": {
    "611": {"item_id": "611", "options": {"capacity": "1L", "material": "glass", "color": "white"}, "price": 153.25}}}
ORDER = {"order_id": "#W5490111", "status": "pending", "items": [
    {"name": "Action Camera", "product_id": "3377618313", "item_id": "111", "price": 481.5,
     "options": {"resolution": "4K", "waterproof": "yes", "color": "silver"}},
    {"name": "T-Shirt", "product_id": "9523456873", "item_id": "711", "price": 53.27,
     "options": {"color": "black", "size": "M"}}],
         "payment_history": [{"transaction_type": "payment", "amount": 534.77, "payment_method_id": "credit_card_1"}]}
OTHER_ORDER = {"order_id": "#W7387996", "status": "delivered", "items": [
    {"name": "Cycling Helmet", "product_id": "7765186836", "item_id": "811", "price": 197.33,
     "options": {"size": "S", "color": "red", "ventilation": "low"}}]}


def cameras() -> Run:
    return Run().call("get_product_details", {"product_id": "3377618313"}).result("get_product_details", CAMERAS)


def orders() -> Run:
    return (
        Run().call("get_order_details", {"order_id": "#W5490111"}).result("get_order_details", ORDER)
        .call("get_order_details", {"order_id": "#W7387996"}).result("get_order_details", OTHER_ORDER)
    )


def test_short_and_yes_no_options_help_name_the_variant_a_description_means():
    # "4K" (too short to name a record alone) and "waterproof" (waterproof:
    # yes) make 111 the one described; $538.60 is 222's price.
    rep = cameras().reply("Here is the option:\n- 4K resolution, waterproof, silver color ($538.60)").report(task=TASK)
    assert rep.first_break == 2 and rep.evidence["pattern"] == "wrong_record" and "538.6" in rep.reason
    assert cameras().reply("Here is the option:\n- 4K resolution, waterproof, silver color ($481.50)").report(task=TASK) \
        .first_break is None


def test_a_short_option_supports_a_description_but_is_never_the_misread_value():
    # "1L" is the kettle's capacity and the same volume as the bottle's
    # "1000ml": the red steel bottle described, not a value of the kettle's.
    run = (
        Run().call("get_product_details", {"product_id": "8310926033"}).result("get_product_details", BOTTLES)
        .call("get_product_details", {"product_id": "1075968781"}).result("get_product_details", KETTLES)
    )
    assert run.reply("There is a 1L water bottle in red, stainless steel (item 511) at $49.51.").report(task=TASK) \
        .first_break is None


def test_a_thing_labelled_with_another_things_id_is_a_wrong_record():
    rep = orders().reply("To confirm, you want to cancel the T-Shirt (item ID 111) from order #W5490111?").report(task=TASK)
    assert rep.first_break == 4 and rep.evidence["pattern"] == "wrong_record" and "“T-Shirt”" in rep.reason
    assert orders().reply("To confirm, you want to cancel the Action Camera (item ID 111) from order #W5490111?") \
        .report(task=TASK).first_break is None


def modified(reply: str) -> Run:
    return (
        cameras().call("get_order_details", {"order_id": "#W5490111"}).result("get_order_details", ORDER)
        .user("Please change my camera to the 5K one.")
        .call("modify_pending_order_items", {"order_id": "#W5490111", "item_ids": ["111"], "new_item_ids": ["222"],
                                             "payment_method_id": "credit_card_1"})
        .result("modify_pending_order_items", ORDER)
        .reply(reply)
    )


def test_the_report_of_a_write_describes_the_records_the_call_acted_on():
    rep = modified("Your camera has been changed to the 5K, black version.").report(task=TASK)
    assert rep.first_break == 7 and rep.evidence["pattern"] == "wrong_record" and "black" in rep.reason
    assert modified("Your camera has been changed to the 5K, silver version.").report(task=TASK).first_break is None


def test_what_an_exchange_gave_up_is_the_old_side_of_its_report():
    rep = modified("The T-Shirt in your order #W5490111 has been changed to the 5K version.").report(task=TASK)
    assert rep.first_break == 7 and rep.evidence["pattern"] == "wrong_record" and "“T-Shirt”" in rep.reason
    assert modified("The Action Camera in your order #W5490111 has been changed to the 5K version.").report(task=TASK) \
        .first_break is None


def test_a_thing_said_to_be_contained_in_a_record_must_be_one_of_its_lines():
    rep = orders().reply("Your pending order #W5490111 contains a Cycling Helmet and a T-Shirt.").report(task=TASK)
    assert rep.first_break == 4 and rep.evidence["pattern"] == "wrong_record" and "cycling helmet" in rep.reason
    assert orders().reply("Your pending order #W5490111 contains an Action Camera, but not a Cycling Helmet.").report(task=TASK) \
        .first_break is None


def test_a_thing_listed_under_a_record_it_is_not_part_of_is_a_wrong_record():
    rep = orders().reply("Your order #W5490111 has been updated:\n- Cycling Helmet changed to size M.").report(task=TASK)
    assert rep.first_break == 4 and rep.evidence["pattern"] == "wrong_record"
    assert orders().reply("Your order #W5490111 has been updated:\n- T-Shirt changed to size L.").report(task=TASK) \
        .first_break is None


@pytest.mark.parametrize(("line", "slip"), [
    ("- T-Shirt: $197.33", True),  # the helmet's price
    ("- T-Shirt: $53.27", False),
    ("- T-Shirt: $60.00", False),  # held by no record: worked out, not misread
])
def test_one_thing_named_with_a_price_only_another_thing_holds_is_a_wrong_record(line, slip):
    rep = orders().reply(f"Here are the prices:\n{line}").report(task=TASK)
    assert (rep.first_break == 4 and rep.evidence["pattern"] == "wrong_record") is slip


def test_a_size_written_as_a_word_is_the_letter_a_record_holds():
    rep = orders().reply("Your exchange for a medium T-Shirt in black has been submitted.").report(task=TASK)
    assert rep.first_break is None


def test_a_model_code_of_a_digit_and_a_letter_names_a_value():
    cams = {"name": "Digital Camera", "product_id": "8940227892", "variants": {
        "719": {"item_id": "719", "options": {"resolution": "30MP", "zoom": "5x", "storage": "SD card"},
                "price": 2909.87},
        "922": {"item_id": "922", "options": {"resolution": "30MP", "zoom": "3x", "storage": "CF card"},
                "price": 3066.23}}}
    run = Run().call("get_product_details", {"product_id": "8940227892"}).result("get_product_details", cams)
    steps = list(run.steps)
    rep = run.reply("Current item: 719 (30MP, 3x zoom, SD card) – $2,909.87").report(task=TASK)
    assert rep.first_break == 2 and rep.evidence["pattern"] == "wrong_record" and "3x" in rep.reason
    ok = Run()
    ok.steps = steps
    assert ok.reply("Current item: 719 (30MP, 5x zoom, SD card) – $2,909.87").report(task=TASK).first_break is None


def test_a_value_every_equally_fitting_variant_lacks_is_misread_whichever_was_meant():
    lamps = {"name": "Desk Lamp", "product_id": "6817146515", "variants": {
        "1": {"item_id": "1", "options": {"color": "white", "brightness": "medium", "power source": "USB"},
              "price": 135.24},
        "2": {"item_id": "2", "options": {"color": "black", "brightness": "medium", "power source": "USB"},
              "price": 140.5},
        "3": {"item_id": "3", "options": {"color": "silver", "brightness": "medium", "power source": "USB"},
              "price": 145.9}}}
    watches = {"name": "Wristwatch", "product_id": "6066914160", "variants": {
        "9": {"item_id": "9", "options": {"strap": "leather", "color": "gold"}, "price": 1822.82}}}

    def run(reply: str) -> Run:
        return (
            Run().call("get_product_details", {"product_id": "6817146515"}).result("get_product_details", lamps)
            .call("get_product_details", {"product_id": "6066914160"}).result("get_product_details", watches)
            .reply(reply)
        )

    task = "Products 6817146515 and 6066914160."
    rep = run("Your current desk lamp (gold, medium brightness, USB) will be returned.").report(task=task)
    assert rep.first_break == 4 and rep.evidence["pattern"] == "wrong_record" and "gold" in rep.reason
    assert run("Your current desk lamp (black, medium brightness, USB) will be returned.").report(task=task) \
        .first_break is None


@pytest.mark.parametrize(("reply", "slip"), [
    ("Would you like to exchange your current helmet (size S, black) for a larger one?", True),  # it is red
    ("Would you like to exchange your current helmet (size S, red) for a larger one?", False),
    ("The T-Shirt you ordered is blue.", False),  # no record holds "blue": not a value read from another
    ("The helmet you received is black, size S.", True),  # black is the T-Shirt's
    ("Your new helmet will be black.", False),  # the replacement is another thing
])
def test_the_users_own_thing_is_the_line_of_their_orders_with_that_name(reply, slip):
    rep = orders().reply(reply).report(task=TASK)
    assert (rep.first_break == 4 and rep.evidence["pattern"] == "wrong_record") is slip


def test_a_price_does_not_end_the_clause_about_the_users_own_thing():
    rep = orders().reply("Your current helmet ($53.27) can be exchanged.").report(task=TASK)
    assert rep.first_break == 4 and rep.evidence["pattern"] == "wrong_record" and "53.27" in rep.reason
    assert orders().reply("Your current helmet ($197.33) can be exchanged.").report(task=TASK).first_break is None


def test_a_list_headed_by_one_record_gives_that_records_fields():
    rep = cameras().reply("The cheapest one is item 111:\n• Resolution: 4K\n• Color: black\n• Price: $481.50") \
        .report(task=TASK)
    assert rep.first_break == 2 and rep.evidence["pattern"] == "wrong_record" and "black" in rep.reason
    assert cameras().reply("The cheapest one is item 111:\n• Resolution: 4K\n• Color: silver\n• Price: $481.50") \
        .report(task=TASK).first_break is None


def test_a_change_target_that_names_no_thing_is_a_variant_of_the_thing_changed():
    # 5K silver is 222; black is 333's: neither variant is described.
    rep = cameras().reply("Change the Action Camera to the 5K, waterproof, black option.").report(task=TASK)
    assert rep.first_break == 2 and rep.evidence["pattern"] == "wrong_record"
    assert cameras().reply("Change the Action Camera to the 5K, waterproof, silver option.").report(task=TASK) \
        .first_break is None


@pytest.mark.parametrize(("reply", "slip"), [
    ("You can change the payment method to your Mastercard ending in 8902.", True),  # 8902 is the Visa
    ("You can change the payment method to your Visa ending in 8902.", False),
    ("You can change the payment method to your Mastercard ending in 4336.", False),
])
def test_the_words_before_a_cards_last_digits_label_that_card(reply, slip):
    user = {"user_id": "isabella_lopez_6490", "payment_methods": {
        "credit_card_8897086": {"source": "credit_card", "id": "credit_card_8897086", "brand": "visa",
                                "last_four": "8902"},
        "credit_card_8554680": {"source": "credit_card", "id": "credit_card_8554680", "brand": "mastercard",
                                "last_four": "4336"}}}
    run = Run().call("get_user_details", {"user_id": "isabella_lopez_6490"}).result("get_user_details", user)
    rep = run.reply(reply).report(task="I am isabella_lopez_6490.")
    assert (rep.first_break == 2 and rep.evidence["pattern"] == "wrong_record") is slip


def test_of_two_lines_with_the_users_thing_the_words_pick_the_one_they_fit():
    bottles = {"order_id": "#W3333333", "status": "delivered", "items": [
        {"name": "Water Bottle", "product_id": "8310926033", "item_id": "512", "price": 52.79,
         "options": {"capacity": "500ml", "material": "stainless steel", "color": "black"}}]}
    other = {"order_id": "#W4444444", "status": "delivered", "items": [
        {"name": "Water Bottle", "product_id": "8310926033", "item_id": "513", "price": 47.76,
         "options": {"capacity": "750ml", "material": "glass", "color": "blue"}}]}

    def run(reply: str) -> Run:
        return (
            Run().call("get_order_details", {"order_id": "#W3333333"}).result("get_order_details", bottles)
            .call("get_order_details", {"order_id": "#W4444444"}).result("get_order_details", other)
            .reply(reply)
        )

    task = "My orders are #W3333333 and #W4444444."
    rep = run("Would you like to exchange your 500ml blue stainless steel bottle?").report(task=task)
    assert rep.first_break == 4 and rep.evidence["pattern"] == "wrong_record" and "blue" in rep.reason
    assert run("Would you like to exchange your 500ml black stainless steel bottle?").report(task=task) \
        .first_break is None
    assert run("Would you like to exchange your blue bottle?").report(task=task).first_break is None  # the glass one
