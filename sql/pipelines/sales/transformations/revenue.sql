-- Revenue per customer, and per region over it (a view over another view: Viewlet
-- refreshes customer_revenue first, then applies its changes to region_revenue).
CREATE MATERIALIZED VIEW customer_revenue
COMMENT 'orders and revenue per customer'
AS SELECT o.customer_id, c.region, COUNT(*) AS orders, SUM(o.amount) AS revenue
FROM orders o JOIN customers c ON o.customer_id = c.customer_id
WHERE o.status <> 'cancelled'
GROUP BY o.customer_id, c.region;

CREATE MATERIALIZED VIEW region_revenue AS
SELECT region, COUNT(*) AS customers, SUM(revenue) AS revenue, MAX(revenue) AS top_customer_revenue
FROM customer_revenue
GROUP BY region;
