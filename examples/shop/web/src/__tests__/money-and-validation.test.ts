import { describe, expect, it } from "vitest";
import { formatMoney, parseMoney, percentOff } from "../utils/money";
import { validateAddress, validatePassword } from "../utils/validation";
import { reviewProblems } from "../api/reviews";
import { pageWindow } from "../components/Pagination";

describe("money", () => {
  it("formats and parses cents", () => {
    expect(formatMoney(1250)).toBe("€12.50");
    expect(formatMoney(-5, "GBP")).toBe("-£0.05");
    expect(parseMoney("€1,234.5")).toBe(123450);
    expect(() => parseMoney("12.345")).toThrow(/not an amount/);
  });

  it("rounds percentages half to even like the backend", () => {
    expect(percentOff(250, 1)).toBe(2);
    expect(percentOff(350, 1)).toBe(4);
    expect(percentOff(2848, 10)).toBe(285);
  });
});

describe("validation", () => {
  it("reports every address problem at once", () => {
    const problems = validateAddress({ name: "", line1: "1 High St", city: "London", postcode: "NOPE", country: "GB" });
    expect(problems).toEqual({ name: "recipient name is missing", postcode: "NOPE is not a UK postcode" });
  });

  it("mirrors the server's password rules", () => {
    expect(validatePassword("short")).toMatch(/at least 10/);
    expect(validatePassword("nora-is-great", "nora@example.com")).toMatch(/email address/);
    expect(validatePassword("correct horse battery")).toBeNull();
  });

  it("checks review drafts", () => {
    expect(reviewProblems({ rating: 0, title: "", body: "see http://spam.example" })).toEqual([
      "choose between 1 and 5 stars",
      "links are not allowed in reviews",
    ]);
  });

  it("windows pagination", () => {
    expect(pageWindow(6, 20)).toEqual([1, "gap", 4, 5, 6, 7, 8, "gap", 20]);
  });
});
